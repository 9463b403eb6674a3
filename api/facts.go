package api

import "github.com/agentmem/agentmem/facts"

// RememberRequest is the body of POST /v1/users/{user}/facts.
type RememberRequest struct {
	// Text is the fact, one self-contained statement about the user.
	Text string `json:"text"`
	// Confidence in (0, 1]; absent means the server's default.
	Confidence float64           `json:"confidence,omitempty"`
	Source     facts.Source      `json:"source,omitzero"`
	Metadata   map[string]string `json:"metadata,omitempty"`
}

// FactView is a fact as the API shows it: the stored fact and what its
// confidence is worth now.
type FactView struct {
	facts.Fact
	// EffectiveConfidence is the fact's confidence now, decay applied.
	EffectiveConfidence float64 `json:"effective_confidence"`
	// Relevance and Score are set on search results: relevance to the
	// query in [0, 1], and relevance times effective confidence, the
	// ranking key.
	Relevance *float64 `json:"relevance,omitempty"`
	Score     *float64 `json:"score,omitempty"`
}

// RememberResponse is the answer of POST /v1/users/{user}/facts.
type RememberResponse struct {
	// Outcome is "added" (201) or "reinforced" (200: the same fact was
	// already known, by similarity, and its confidence rose).
	Outcome facts.Outcome `json:"outcome"`
	Fact    FactView      `json:"fact"`
}

// Page sizes of GET /v1/users/{user}/facts without q or k (a search
// returns its k best, k at most MaxFactsK).
const (
	DefaultFactsPageSize = 100
	MaxFactsPageSize     = 1000
	// MaxFactsK bounds k of a facts search.
	MaxFactsK = 200
)

// FactsResponse is the answer of GET /v1/users/{user}/facts.
type FactsResponse struct {
	Facts []FactView `json:"facts"`
	// Damaged are the user's facts left out because their stored form
	// does not decode.
	Damaged []DamagedRecord `json:"damaged,omitempty"`
	// NextPageToken reads the next page of a list (without q or k), as
	// page_token; empty on the last page and for a search.
	NextPageToken string `json:"next_page_token,omitempty"`
}

// FactResponse is the answer of GET /v1/users/{user}/facts/{fact}: the
// fact and the chain of facts it superseded or that superseded it.
type FactResponse struct {
	Fact    FactView     `json:"fact"`
	History []facts.Fact `json:"history,omitempty"`
}
