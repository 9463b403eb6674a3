package api

import "time"

// RememberRequest is the body of POST /v1/users/{user}/facts.
type RememberRequest struct {
	// Text is the fact, one self-contained statement about the user.
	Text string `json:"text"`
	// Confidence in (0, 1]; absent means the server's default.
	Confidence float64           `json:"confidence,omitempty"`
	Source     FactSource        `json:"source,omitzero"`
	Metadata   map[string]string `json:"metadata,omitempty"`
}

// FactView is a fact as the API shows it: the stored fact and what its
// confidence is worth now.
type FactView struct {
	Fact
	// EffectiveConfidence is the fact's confidence now, decay applied.
	EffectiveConfidence float64 `json:"effective_confidence"`
	// Relevance and Score are set on search results: relevance to the
	// query in [0, 1], and relevance times effective confidence, the
	// ranking key.
	Relevance *float64 `json:"relevance,omitempty"`
	Score     *float64 `json:"score,omitempty"`
}

// Outcomes of POST /v1/users/{user}/facts.
const (
	// OutcomeAdded: a new fact was recorded (201).
	OutcomeAdded = "added"
	// OutcomeReinforced: the same fact was already known, by similarity,
	// and its confidence rose (200).
	OutcomeReinforced = "reinforced"
)

// Fact is one thing known about a user, such as "prefers answers in
// French". A contradicted fact is not deleted: SupersededBy names the
// fact that replaced it.
type Fact struct {
	// ID identifies the fact within its tenant.
	ID     string `json:"id"`
	Tenant string `json:"tenant,omitempty"`
	// UserID is the user the fact is about.
	UserID string `json:"user_id"`
	// Text is the fact, as one self-contained statement.
	Text string `json:"text"`
	// Confidence is the base confidence in [0, 1] at ReinforcedAt; decay
	// runs from it (FactView.EffectiveConfidence is what it is worth now).
	Confidence float64 `json:"confidence"`
	// CreatedAt is when the fact was first recorded, ReinforcedAt when it
	// was last added or seen again.
	CreatedAt    time.Time `json:"created_at"`
	ReinforcedAt time.Time `json:"reinforced_at"`
	// Reinforcements counts how many times the fact was seen again after
	// it was added.
	Reinforcements int `json:"reinforcements"`
	// Source is where the fact was first learnt.
	Source FactSource `json:"source,omitzero"`
	// SupersededBy is the ID of the fact that contradicted this one, and
	// SupersededAt when; empty and zero while the fact is valid.
	SupersededBy string            `json:"superseded_by,omitempty"`
	SupersededAt time.Time         `json:"superseded_at,omitzero"`
	Metadata     map[string]string `json:"metadata,omitempty"`
}

// FactSource is where a fact was learnt: a session, a step of it, an
// agent; any may be empty.
type FactSource struct {
	SessionID string `json:"session_id,omitempty"`
	StepSeq   int64  `json:"step_seq,omitempty"`
	Agent     string `json:"agent,omitempty"`
}

// RememberResponse is the answer of POST /v1/users/{user}/facts.
type RememberResponse struct {
	// Outcome is "added" (201) or "reinforced" (200: the same fact was
	// already known, by similarity, and its confidence rose).
	Outcome string   `json:"outcome"`
	Fact    FactView `json:"fact"`
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
	Fact    FactView `json:"fact"`
	History []Fact   `json:"history,omitempty"`
}
