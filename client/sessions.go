package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/agentmem/agentmem/api"
)

// The session routes: sessions, their steps and their logs.

// CreateSession creates a session (POST /v1/sessions) in the API key's
// tenant. The server stores the settings that apply: a session created
// without a Pinning gets the default pinning, an AutoCompact its
// defaults. A req.ID in use is an *Error wrapping ErrConflict, with
// Field "id".
func (c *Client) CreateSession(ctx context.Context, req api.CreateSessionRequest) (*api.Session, error) {
	return c.session(ctx, request{method: http.MethodPost, path: "/v1/sessions", body: req})
}

// Fork creates a branch of a session that sees its log up to req.AtSeq
// (POST /v1/sessions/{id}/fork). The branch gets the parent's tenant,
// user and agent, and, when the request leaves them out, its metadata,
// retention, pinning and automatic compaction.
func (c *Client) Fork(ctx context.Context, sessionID string, req api.ForkRequest) (*api.Session, error) {
	if err := checkID("session", sessionID); err != nil {
		return nil, err
	}
	return c.session(ctx, request{method: http.MethodPost, path: "/v1/sessions/" + pathID(sessionID) + "/fork", body: req})
}

// session sends req, whose answer is a session, and checks the session.
func (c *Client) session(ctx context.Context, req request) (*api.Session, error) {
	sess, err := callFor[api.Session](ctx, c, req)
	if err != nil {
		return nil, err
	}
	if err := checkSession(sess); err != nil {
		return nil, err
	}
	return sess, nil
}

// checkSession checks a session the server returned.
func checkSession(s *api.Session) error {
	if s.ID == "" || s.LastSeq < 0 || s.ForkSeq < 0 {
		return fmt.Errorf("agentmem client: the server returned a malformed session %q", s.ID)
	}
	return nil
}

// GetSession returns a session (GET /v1/sessions/{id}).
func (c *Client) GetSession(ctx context.Context, sessionID string) (*api.Session, error) {
	if err := checkID("session", sessionID); err != nil {
		return nil, err
	}
	return c.session(ctx, request{method: http.MethodGet, path: "/v1/sessions/" + pathID(sessionID), idempotent: true})
}

// ListQuery selects a page of the API key's tenant's sessions (GET
// /v1/sessions). Zero values leave a parameter out.
type ListQuery struct {
	// UserID, Agent and ParentID keep the sessions of a user, of an
	// agent, and the branches of a session.
	UserID, Agent, ParentID string
	// PageSize bounds the page (0: the server's default).
	PageSize int
	// PageToken is a previous page's NextPageToken.
	PageToken string
}

// ListSessions returns a page of the API key's tenant's sessions (GET
// /v1/sessions); its NextPageToken reads the next. The sessions of the
// page whose stored record does not decode are in its Damaged.
func (c *Client) ListSessions(ctx context.Context, q ListQuery) (*api.ListSessionsResponse, error) {
	v := url.Values{}
	if q.UserID != "" {
		v.Set("user_id", q.UserID)
	}
	if q.Agent != "" {
		v.Set("agent", q.Agent)
	}
	if q.ParentID != "" {
		v.Set("parent_id", q.ParentID)
	}
	if q.PageSize > 0 {
		v.Set("page_size", strconv.Itoa(q.PageSize))
	}
	if q.PageToken != "" {
		v.Set("page_token", q.PageToken)
	}
	var out api.ListSessionsResponse
	if _, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/sessions", query: v, idempotent: true}, &out); err != nil {
		return nil, err
	}
	for _, s := range out.Sessions {
		if s == nil {
			return nil, fmt.Errorf("agentmem client: the server listed a null session")
		}
		if err := checkSession(s); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// DeleteSession deletes a session and its log (DELETE
// /v1/sessions/{id}); a missing one is ErrNotFound.
func (c *Client) DeleteSession(ctx context.Context, sessionID string) error {
	if err := checkID("session", sessionID); err != nil {
		return err
	}
	_, err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/sessions/" + pathID(sessionID)})
	return err
}

// AppendOptions are the headers and parameters of an append route.
type AppendOptions struct {
	// IdempotencyKey names the request: steps without an ID get one
	// derived from it, so sending the same request again stores nothing
	// twice. Without one the client makes up a new key for the call when
	// the route needs one, so that its own retries (WithRetries) are
	// safe; give one to make retries of your own safe too (after a
	// crash, say).
	IdempotencyKey string
	// IfMatch, when set, is the session's expected last sequence number:
	// the append fails with 409 (ErrConflict) if it is not, and
	// Error.LastSeq holds the current one.
	IfMatch *int64
	// FlushPending records every tool call still without a result after
	// the request, of the request or of the session, as failed (POST
	// /messages only); otherwise such calls stay pending until their
	// results are appended.
	FlushPending bool
}

func (o AppendOptions) header() map[string]string {
	h := map[string]string{}
	if o.IdempotencyKey != "" {
		h["Idempotency-Key"] = o.IdempotencyKey
	}
	if o.IfMatch != nil {
		h["If-Match"] = strconv.Quote(strconv.FormatInt(*o.IfMatch, 10))
	}
	return h
}

// AppendSteps appends steps in the core's typed step JSON (POST
// /v1/sessions/{id}/steps; see api.StepHeader for the form, and
// agentmem.MarshalStep to encode typed steps). The steps are appended
// atomically, all or none. A step without an ID gets KEY/i (i its index
// in steps) from opts.IdempotencyKey, or from a new key without one; a
// step without a time gets the server's clock.
func (c *Client) AppendSteps(ctx context.Context, sessionID string, steps []json.RawMessage, opts AppendOptions) (*api.AppendResponse, error) {
	if steps == nil {
		steps = []json.RawMessage{}
	}
	return c.appendSteps(ctx, sessionID, steps, steps, opts)
}

// AppendWithCompaction appends steps and a compaction record in one write
// (POST /v1/sessions/{id}/steps with an api.AppendStepsRequest), as a
// bound memory's prune or summary does: the record's working set may name
// the request's steps by placeholder. The steps get IDs and times as with
// AppendSteps. A request of steps is sent again after a retryable failure
// (WithRetries); one of a compaction alone is not, having nothing to make
// a retry idempotent.
func (c *Client) AppendWithCompaction(ctx context.Context, sessionID string, req api.AppendStepsRequest, opts AppendOptions) (*api.AppendResponse, error) {
	if req.Compaction == nil {
		return nil, invalid("compaction", "is required (AppendSteps appends steps alone)")
	}
	if req.Steps == nil {
		req.Steps = []json.RawMessage{}
	}
	return c.appendSteps(ctx, sessionID, req.Steps, req, opts)
}

// appendSteps sends body, which holds steps, to POST /steps.
func (c *Client) appendSteps(ctx context.Context, sessionID string, steps []json.RawMessage, body any, opts AppendOptions) (*api.AppendResponse, error) {
	if err := checkID("session", sessionID); err != nil {
		return nil, err
	}
	// A retry stores nothing twice when every step has an ID, its own or
	// one derived from the key: without a key, a step without an ID gets
	// one derived from a new key.
	if opts.IdempotencyKey == "" {
		for i, raw := range steps {
			var h api.StepHeader
			if err := json.Unmarshal(raw, &h); err != nil {
				return nil, invalid(fmt.Sprintf("steps[%d]", i), "is not a step object: "+err.Error())
			}
			if h.ID == "" {
				opts.IdempotencyKey = newKey()
				break
			}
		}
	}
	var out api.AppendResponse
	if _, err := c.call(ctx, request{method: http.MethodPost, path: "/v1/sessions/" + pathID(sessionID) + "/steps",
		body: body, header: opts.header(), idempotent: len(steps) > 0}, &out); err != nil {
		return nil, err
	}
	if len(out.Seqs) != len(steps) {
		return nil, fmt.Errorf("agentmem client: the server answered %d sequence numbers for %d steps", len(out.Seqs), len(steps))
	}
	return &out, nil
}

// ReadQuery selects entries of a session's log (GET
// /v1/sessions/{id}/steps): those after sequence number After, the first
// Limit of them (0: the server's default, api.DefaultReadLimit) or the
// Last ones; at most api.MaxReadLimit.
type ReadQuery struct {
	After int64
	Limit int
	Last  int
}

// ReadSteps reads a page of a session's log (GET /v1/sessions/{id}/steps):
// its step entries and its compaction entries (see ReadQuery).
func (c *Client) ReadSteps(ctx context.Context, sessionID string, q ReadQuery) (*api.ReadStepsResponse, error) {
	if err := checkID("session", sessionID); err != nil {
		return nil, err
	}
	v := url.Values{}
	if q.After > 0 {
		v.Set("after", strconv.FormatInt(q.After, 10))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Last > 0 {
		v.Set("last", strconv.Itoa(q.Last))
	}
	return callFor[api.ReadStepsResponse](ctx, c, request{method: http.MethodGet, path: "/v1/sessions/" + pathID(sessionID) + "/steps", query: v, idempotent: true})
}

// ReadLog reads the first limit entries (0: all of them) of a session's
// log after sequence number after, in pages of api.DefaultReadLimit
// entries. It reads as of the session's last sequence number when the
// first page was read (the answer's LastSeq): entries appended since are
// left out.
func (c *Client) ReadLog(ctx context.Context, sessionID string, after int64, limit int) (*api.ReadStepsResponse, error) {
	out := &api.ReadStepsResponse{Steps: []json.RawMessage{}, LastSeq: -1}
	n := 0
	for {
		size := api.DefaultReadLimit
		if limit > 0 {
			size = min(size, limit-n)
		}
		page, err := c.ReadSteps(ctx, sessionID, ReadQuery{After: after, Limit: size})
		if err != nil {
			return nil, err
		}
		if out.LastSeq < 0 {
			out.LastSeq = page.LastSeq
		}
		// The page's entries in the order of their sequence numbers: its
		// steps and its compaction entries, each in order.
		seqs := make([]int64, len(page.Steps))
		for i, raw := range page.Steps {
			var h api.StepHeader
			if err := json.Unmarshal(raw, &h); err != nil {
				return nil, fmt.Errorf("agentmem client: the server returned a malformed step: %w", err)
			}
			seqs[i] = h.Number
		}
		i, j, read, done := 0, 0, 0, false
		for (i < len(seqs) || j < len(page.Compactions)) && !done {
			var seq int64
			if j >= len(page.Compactions) || (i < len(seqs) && seqs[i] < page.Compactions[j].Seq) {
				seq = seqs[i]
				if seq > out.LastSeq {
					done = true
					break
				}
				out.Steps = append(out.Steps, page.Steps[i])
				i++
			} else {
				seq = page.Compactions[j].Seq
				if seq > out.LastSeq {
					done = true
					break
				}
				out.Compactions = append(out.Compactions, page.Compactions[j])
				j++
			}
			if seq <= after {
				return nil, fmt.Errorf("agentmem client: the server returned a log entry out of place (seq %d after %d)", seq, after)
			}
			after = seq
			read++
		}
		n += read
		if done || read < size || (limit > 0 && n >= limit) || after >= out.LastSeq {
			return out, nil
		}
	}
}

// Pop removes the newest message from a session's working set and returns
// it (POST /v1/sessions/{id}/pop). A pop is not idempotent, so the client
// does not retry it; set opts.IfMatch to make a retry of your own safe.
// An empty session is an *Error wrapping ErrNothingToPop.
func (c *Client) Pop(ctx context.Context, sessionID string, opts PopOptions) (*api.PopResponse, error) {
	if err := checkID("session", sessionID); err != nil {
		return nil, err
	}
	return callFor[api.PopResponse](ctx, c, request{method: http.MethodPost, path: "/v1/sessions/" + pathID(sessionID) + "/pop",
		header: AppendOptions{IfMatch: opts.IfMatch}.header()})
}

// PopOptions are the headers of POST /v1/sessions/{id}/pop.
type PopOptions struct {
	// IfMatch, when set, is the session's expected last sequence number:
	// the pop fails with 409 (ErrConflict) if it is not, and
	// Error.LastSeq holds the current one.
	IfMatch *int64
}

// Ping checks that the server is up and its store reachable (GET
// /readyz).
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/readyz"})
	return err
}
