package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/agentmem/agentmem/api"
)

// The items routes: a session as the Responses-API input items that the
// OpenAI Agents SDK's sessions store (see package responses for how they
// become steps, and back, exactly).

// AppendItems appends Responses-API input items, each a JSON object (POST
// /v1/sessions/{id}/items): messages, function calls (pending until their
// outputs arrive, in this request or a later one), their outputs, and any
// other item type, which comes back as it was. The request carries an
// Idempotency-Key (opts.IdempotencyKey, or a new one), so a retry stores
// nothing twice.
func (c *Client) AppendItems(ctx context.Context, sessionID string, items []json.RawMessage, opts AppendOptions) (*api.AppendResponse, error) {
	if err := checkID("session", sessionID); err != nil {
		return nil, err
	}
	if items == nil {
		items = []json.RawMessage{}
	}
	if opts.IdempotencyKey == "" {
		opts.IdempotencyKey = newKey()
	}
	return callFor[api.AppendResponse](ctx, c, request{method: http.MethodPost, path: "/v1/sessions/" + pathID(sessionID) + "/items",
		body: api.ItemsRequest{Items: items}, header: opts.header(), idempotent: true})
}

// Items returns a session's working set as Responses-API input items,
// oldest first, each exactly as it was appended (GET
// /v1/sessions/{id}/items); limit > 0 returns the newest limit of them.
// The server answers a page at a time (api.DefaultItemsPageSize items,
// at most api.MaxItemsPageBytes); Items reads every page, so it returns
// every item as of its first page. When a pop, a clear or a compaction
// changes the items between two pages (409 on page_token), it reads
// again from the first page, a few times.
func (c *Client) Items(ctx context.Context, sessionID string, limit int) ([]json.RawMessage, error) {
	if err := checkID("session", sessionID); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		items, err := c.readItems(ctx, sessionID, limit)
		var e *Error
		if errors.As(err, &e) && e.Status == http.StatusConflict && e.Field == "page_token" && attempt < readConsistencyAttempts {
			continue
		}
		return items, err
	}
}

// readItems reads every page of a read of a session's items.
func (c *Client) readItems(ctx context.Context, sessionID string, limit int) ([]json.RawMessage, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	items := []json.RawMessage{}
	for {
		var out api.ItemsResponse
		if _, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/sessions/" + pathID(sessionID) + "/items", query: q, idempotent: true}, &out); err != nil {
			return nil, err
		}
		items = append(items, out.Items...)
		if out.NextPageToken == "" {
			return items, nil
		}
		if len(out.Items) == 0 {
			return nil, fmt.Errorf("agentmem client: the server returned an empty page of items with a next page")
		}
		q = url.Values{"page_token": {out.NextPageToken}}
	}
}

// PopItem removes the newest item from a session's working set and
// returns it (POST /v1/sessions/{id}/items/pop): a function call's output
// popped leaves the call pending again. Like Pop it is not retried; an
// empty session is an *Error wrapping ErrNothingToPop.
func (c *Client) PopItem(ctx context.Context, sessionID string, opts PopOptions) (json.RawMessage, error) {
	if err := checkID("session", sessionID); err != nil {
		return nil, err
	}
	var out api.PopItemResponse
	if _, err := c.call(ctx, request{method: http.MethodPost, path: "/v1/sessions/" + pathID(sessionID) + "/items/pop",
		header: AppendOptions{IfMatch: opts.IfMatch}.header()}, &out); err != nil {
		return nil, err
	}
	return out.Item, nil
}

// ClearItems empties a session's working set (DELETE
// /v1/sessions/{id}/items): the log keeps what happened, as a compaction
// entry, and the session stays usable.
func (c *Client) ClearItems(ctx context.Context, sessionID string, opts PopOptions) error {
	if err := checkID("session", sessionID); err != nil {
		return err
	}
	_, err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/sessions/" + pathID(sessionID) + "/items",
		header: AppendOptions{IfMatch: opts.IfMatch}.header()})
	return err
}

// readConsistencyAttempts bounds how often Items starts over when the
// session changed between its pages.
const readConsistencyAttempts = 3
