package api

import "encoding/json"

// The items routes: a session as the Responses-API input items that the
// OpenAI Agents SDK's sessions store (package responses converts them).

// ItemsRequest is the body of POST /v1/sessions/{id}/items; the answer is
// an AppendResponse.
type ItemsRequest struct {
	// Items are Responses-API input items, each a JSON object.
	Items []json.RawMessage `json:"items"`
}

// Bounds of GET /v1/sessions/{id}/items: a page holds at most page_size
// items (DefaultItemsPageSize when none is asked for) and stops before
// the item that would take it past MaxItemsPageBytes of items (a page
// has at least one item); next_page_token reads on.
const (
	DefaultItemsPageSize = 1000
	MaxItemsPageSize     = 10000
	MaxItemsPageBytes    = 8 << 20
)

// ItemsResponse is the body of GET /v1/sessions/{id}/items: a page of
// the items.
type ItemsResponse struct {
	// Items are the page's items, oldest first, each exactly as it was
	// appended.
	Items []json.RawMessage `json:"items"`
	// NextPageToken reads the next page, as page_token; empty on the
	// last page. The pages together are the items as of the first page:
	// steps appended since come after them and are not in them, and a
	// pop, clear or compaction since makes the next page 409 conflict (a
	// reader starts again from the first page).
	NextPageToken string `json:"next_page_token,omitempty"`
}

// PopItemResponse is the body of POST /v1/sessions/{id}/items/pop.
type PopItemResponse struct {
	// Item is the item popped, exactly as it was appended.
	Item json.RawMessage `json:"item"`
}
