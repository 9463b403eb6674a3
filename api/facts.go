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
	// ValidFrom is when the fact became true in the world (RFC 3339);
	// absent means when it is recorded.
	ValidFrom time.Time `json:"valid_from,omitzero"`
	// ValidTo is when it stopped being true, after ValidFrom; absent
	// means it still is.
	ValidTo time.Time `json:"valid_to,omitzero"`
	// Supersedes is the ID of a fact of the user that this one replaces:
	// that fact is marked superseded and closed at this one's ValidFrom.
	Supersedes string `json:"supersedes,omitempty"`
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
	// OutcomeSuperseded: with supersedes, the old fact was superseded and
	// closed (200); the fact is its successor, new or reinforced.
	OutcomeSuperseded = "superseded"
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
	SupersededBy string    `json:"superseded_by,omitempty"`
	SupersededAt time.Time `json:"superseded_at,omitzero"`
	// ValidFrom is when the fact became true in the world (event time;
	// by default when it was recorded), ValidTo when it stopped; absent
	// while it still holds.
	ValidFrom time.Time         `json:"valid_from"`
	ValidTo   time.Time         `json:"valid_to,omitzero"`
	Metadata  map[string]string `json:"metadata,omitempty"`
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
	// Outcome is "added" (201), "reinforced" (200: the same fact was
	// already known, by similarity, and its confidence rose) or, with
	// supersedes, "superseded" (200).
	Outcome string   `json:"outcome"`
	Fact    FactView `json:"fact"`
	// Previous is, for "superseded", the old fact as now recorded.
	Previous *FactView `json:"previous,omitempty"`
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

// FactPatch is the body of PATCH /v1/users/{user}/facts/{fact}, a JSON
// merge patch (RFC 7396): a member left out is left as it is. In
// metadata, a key whose value is null is removed; metadata: null removes
// every key; valid_to: null reopens the fact (it still holds). text,
// confidence and valid_from cannot be null.
type FactPatch struct {
	Text       *string            `json:"text,omitempty"`
	Confidence *float64           `json:"confidence,omitempty"`
	Metadata   map[string]*string `json:"metadata,omitempty"`
	ValidFrom  *time.Time         `json:"valid_from,omitempty"`
	ValidTo    *time.Time         `json:"valid_to,omitempty"`
	// Reason says why, for the fact's history.
	Reason string `json:"reason,omitempty"`
}

// FactState is what a fact said at one point of its history.
type FactState struct {
	Text       string            `json:"text"`
	Confidence float64           `json:"confidence"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	ValidFrom  time.Time         `json:"valid_from"`
	ValidTo    time.Time         `json:"valid_to,omitzero"`
}

// FactChange is one change of a fact's history: who did what, when and
// why, and what the fact said before and after.
type FactChange struct {
	Seq int64 `json:"seq"`
	// Action is "added", "updated", "superseded" or "forgotten".
	Action string `json:"action"`
	// By is who acted: an agent, an API key, an MCP client.
	By     string    `json:"by,omitempty"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
	// Successor is, for "superseded", the fact that replaced this one.
	Successor string `json:"successor,omitempty"`
	// Digest is, for "forgotten", "sha256:" and the hex SHA-256 of the
	// forgotten text.
	Digest string `json:"digest,omitempty"`
	// Before and After are what the fact said before and after: After
	// alone for "added", both for "updated" and "superseded", neither
	// for "forgotten" (forgetting erases them from every change).
	Before *FactState `json:"before,omitempty"`
	After  *FactState `json:"after,omitempty"`
}

// FactHistoryResponse is the answer of GET
// /v1/users/{user}/facts/{fact}/history.
type FactHistoryResponse struct {
	// Changes are the fact's changes, oldest first.
	Changes []FactChange `json:"changes"`
}

// MaxFactFilters bounds the filter=key:value parameters of GET
// /v1/users/{user}/facts.
const MaxFactFilters = 8

// ExtractFactsRequest is the body of POST /v1/users/{user}/facts/extract:
// a conversation turn for the server's extractor to learn from.
type ExtractFactsRequest struct {
	// Messages are the turn, as OpenAI chat messages (the shape of POST
	// /v1/sessions/{id}/messages): typically the user's message(s) and
	// the assistant's answer. At least one.
	Messages []OpenAIMessage `json:"messages"`
	// Source is recorded on the facts the turn adds.
	Source FactSource `json:"source,omitzero"`
}

// ExtractFactsResponse is the answer of POST
// /v1/users/{user}/facts/extract: what the extractor decided and what
// each decision did, in its order.
type ExtractFactsResponse struct {
	Decisions []ExtractedDecision `json:"decisions"`
}

// ExtractedDecision is one decision of an extraction and what it did.
type ExtractedDecision struct {
	// Action is the extractor's decision: "add", "reinforce",
	// "supersede" or "ignore".
	Action string `json:"action"`
	// Outcome is what it did: "added", "reinforced" (an add of what a
	// valid fact already says reinforces it), "superseded", or "ignored"
	// (nothing written: an ignore, or an add of what the same source
	// already taught).
	Outcome string `json:"outcome"`
	// Fact is the fact added or reinforced or, for "superseded", the
	// successor.
	Fact *FactView `json:"fact,omitempty"`
	// Previous is, for "superseded", the old fact as now recorded.
	Previous *FactView `json:"previous,omitempty"`
}
