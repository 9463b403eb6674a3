package api

import "time"

// Bounds of the recall routes.
const (
	// MaxRecallDocuments bounds the documents of one POST /v1/recall.
	MaxRecallDocuments = 1000
	// MaxRecallK bounds k of a recall search.
	MaxRecallK = 200
	// DefaultRecallK is k when the search names none.
	DefaultRecallK = 10
	// MaxRecallWindow bounds before and after of a recall search.
	MaxRecallWindow = 20
	// MaxQueryBytes bounds the text of a search query.
	MaxQueryBytes = 8 << 10
	// MaxRecallOffset bounds offset of a recall search.
	MaxRecallOffset = 1000
	// MaxRecallSearchBytes bounds the hits of one answer of a recall
	// search, as JSON: a hit (with its window) that would take them past
	// it is left out with the hits after it, and NextOffset says where
	// they start. The best hit is always there.
	MaxRecallSearchBytes = 8 << 20
)

// RecallDocument is a document of the recall index as the API shows it.
type RecallDocument struct {
	// ID names the document within the tenant; upserting it again
	// replaces it. Conversation turns are "<session>#<seq>".
	ID       string            `json:"id"`
	Text     string            `json:"text"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Time     *time.Time        `json:"time,omitempty"`
	// Group and Seq place the document in an ordered stream (a session
	// and its step number): neighbours are found by them.
	Group string `json:"group,omitempty"`
	Seq   int64  `json:"seq,omitempty"`
	// Embedding is a precomputed vector; EmbeddingModel names its model.
	Embedding      []float32 `json:"embedding,omitempty"`
	EmbeddingModel string    `json:"embedding_model,omitempty"`
}

// UpsertRecallRequest is the body of POST /v1/recall.
type UpsertRecallRequest struct {
	Documents []RecallDocument `json:"documents"`
}

// UpsertRecallResponse is the answer of POST /v1/recall.
type UpsertRecallResponse struct {
	// IDs are the documents' IDs, in order (generated where none was
	// given).
	IDs []string `json:"ids"`
}

// RecallHit is one result of a recall search.
type RecallHit struct {
	RecallDocument
	Score float64 `json:"score"`
	// SessionID and Step name the session and step of a conversation
	// turn; absent for other documents.
	SessionID string `json:"session_id,omitempty"`
	Step      int64  `json:"step,omitempty"`
	// Window is the hit with its neighbouring turns, in order, when
	// before or after were asked for.
	Window []RecallDocument `json:"window,omitempty"`
}

// RecallSearchResponse is the answer of GET /v1/recall/search.
type RecallSearchResponse struct {
	Hits []RecallHit `json:"hits"`
	// NextOffset is set when hits were left out to keep the answer within
	// MaxRecallSearchBytes: the offset of the first left out, to search
	// again with (and the same query) to get them.
	NextOffset int `json:"next_offset,omitempty"`
	// Damaged are the documents the search found but left out because
	// their stored form does not decode.
	Damaged []DamagedRecord `json:"damaged,omitempty"`
}
