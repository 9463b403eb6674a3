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

// ItemsResponse is the body of GET /v1/sessions/{id}/items.
type ItemsResponse struct {
	// Items are the working set's items, oldest first, each exactly as
	// it was appended.
	Items []json.RawMessage `json:"items"`
}

// PopItemResponse is the body of POST /v1/sessions/{id}/items/pop.
type PopItemResponse struct {
	// Item is the item popped, exactly as it was appended.
	Item json.RawMessage `json:"item"`
}
