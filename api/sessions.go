package api

import (
	"encoding/json"
	"time"
)

// Read limits of GET /v1/sessions/{id}/steps.
const (
	DefaultReadLimit = 1000
	MaxReadLimit     = 10000
)

// Retentions of a session: how long it lives.
const (
	// RetentionSingleRun: deleted when the run that created it ends, or
	// when it expires.
	RetentionSingleRun = "single_run"
	// RetentionSession: lives until deleted or expired; the default.
	RetentionSession = "session"
	// RetentionPersistent: never expires; only a delete removes it.
	RetentionPersistent = "persistent"
)

// Session is a session as the API shows it (GET /v1/sessions/{id}, and
// the answers of a create, a fork and a list).
type Session struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant,omitempty"`
	UserID string `json:"user_id,omitempty"`
	Agent  string `json:"agent,omitempty"`
	// ParentID and ForkSeq describe a branch: it sees the parent's log up
	// to and including sequence number ForkSeq.
	ParentID string            `json:"parent_id,omitempty"`
	ForkSeq  int64             `json:"fork_seq,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Retention is one of the Retention constants.
	Retention string `json:"retention"`
	// ExpiresAt is when the session expires (zero: never).
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// LastSeq is the sequence number of the newest entry of the session's
	// log, inherited history included; it is also the session's ETag.
	LastSeq int64 `json:"last_seq"`
	// Pinning is what the session's contexts always show, AutoCompact
	// its automatic compaction (absent: never), and ExtractFacts whether
	// facts about its user are learnt from its turns in the background
	// (absent: the server's default, serve --extract-facts). All are
	// fixed at creation.
	Pinning      *Pinning     `json:"pinning,omitempty"`
	AutoCompact  *AutoCompact `json:"auto_compact,omitempty"`
	ExtractFacts *bool        `json:"extract_facts,omitempty"`
}

// Pinning is what a session's contexts always show, whatever the budget.
type Pinning struct {
	// SystemPrompts pins every system prompt.
	SystemPrompts bool `json:"system_prompts"`
	// FirstTask pins the first task of the working set.
	FirstTask bool `json:"first_task"`
	// Tasks pins every task.
	Tasks bool `json:"tasks"`
	// Summary pins the newest summary of the working set.
	Summary bool `json:"summary"`
}

// AutoCompact has a session compacted automatically when its working set
// grows past MaxTokens.
type AutoCompact struct {
	// MaxTokens is the trigger: the working set's cost above which it is
	// compacted (required).
	MaxTokens int `json:"max_tokens"`
	// TargetTokens is what a compaction brings the working set down to;
	// 0 means half of MaxTokens.
	TargetTokens int `json:"target_tokens,omitempty"`
	// KeepRecent is the number of newest unpinned steps kept as they are;
	// 0 means the server's default.
	KeepRecent int `json:"keep_recent,omitempty"`
	// Summarizer is SummarizerExtractive or SummarizerLLM; empty means
	// the server's choice.
	Summarizer string `json:"summarizer,omitempty"`
}

// AppendResponse is the body of a successful POST /steps or /messages.
type AppendResponse struct {
	// Seqs are the sequence numbers of the request's steps, in order
	// (for a retried request, the numbers they were stored under).
	Seqs []int64 `json:"seqs"`
	// LastSeq is the session's last sequence number after the append; it
	// is also the ETag, for the next If-Match.
	LastSeq int64 `json:"last_seq"`
	// CompactionSeq is the sequence number of the compaction entry of a
	// request that had one.
	CompactionSeq int64 `json:"compaction_seq,omitempty"`
	// Updated (POST /messages) are the sequence numbers of earlier,
	// pending actions whose tool calls the request's tool messages
	// answered: the copies with their results are in the compaction entry
	// CompactionSeq, an amendment.
	Updated []int64 `json:"updated,omitempty"`
}

// Steps travel in the core's typed step JSON: an object whose "type"
// names the kind of step, with the step's number, ID, time and metadata
// beside its own fields:
//
//	{"type":"task","number":1,"id":"...","time":"...","task":"Fix the login test."}
//
// The server decodes them strictly (an unknown field or type is 400). The
// wire types hold them as json.RawMessage: a program with typed steps
// encodes them with agentmem.MarshalStep and decodes them with
// agentmem.UnmarshalStep (package client/remote does it for a
// store.Store), and StepHeader reads the fields every step has.

// StepHeader is what every step's JSON has: its type, its number (its
// sequence number in a session's log), its ID, time and metadata.
// Decoding a step into it ignores the step's own fields.
type StepHeader struct {
	Type     string            `json:"type"`
	Number   int64             `json:"number"`
	ID       string            `json:"id,omitempty"`
	Time     time.Time         `json:"time,omitzero"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// AppendStepsRequest is the body of POST /v1/sessions/{id}/steps that
// appends steps and a compaction record in one write, as a bound memory's
// prune or summary does. The route also takes one step, or an array of
// steps, alone.
type AppendStepsRequest struct {
	Steps      []json.RawMessage `json:"steps"`
	Compaction *CompactionRecord `json:"compaction"`
}

// CompactionRecord is a compaction to append: a full record or an
// amendment. A full record has the working set after it, the steps it
// takes out and the modified copies it puts in; its working set may name
// the request's steps by placeholder (-1 for steps[0], -2 for steps[1],
// ...). An amendment (Amend) has only copies that stand in for steps of
// the working set, without working or removed list.
type CompactionRecord struct {
	Amend    bool              `json:"amend,omitempty"`
	Working  *[]int64          `json:"working,omitempty"`
	Replaced []json.RawMessage `json:"replaced,omitempty"`
	Removed  []int64           `json:"removed,omitempty"`
}

// ReadStepsResponse is the body of GET /v1/sessions/{id}/steps.
type ReadStepsResponse struct {
	// Steps are the step entries read, oldest first, in the step JSON;
	// each step's number is its sequence number.
	Steps []json.RawMessage `json:"steps"`
	// Compactions are the compaction entries among them.
	Compactions []CompactionEntry `json:"compactions,omitempty"`
	// LastSeq is the session's last sequence number.
	LastSeq int64 `json:"last_seq"`
}

// CompactionEntry is a compaction entry of the log: a full record or an
// amendment. A full record has the working set after it, the steps it
// took out and the modified copies it put in. An amendment (Amend) has
// only copies that stand in for steps of the working set, such as an
// action completed by a tool result sent later, and no working or
// removed list.
type CompactionEntry struct {
	Seq      int64             `json:"seq"`
	Time     time.Time         `json:"time"`
	Amend    bool              `json:"amend,omitempty"`
	Working  *[]int64          `json:"working,omitempty"`
	Removed  []int64           `json:"removed,omitempty"`
	Replaced []json.RawMessage `json:"replaced,omitempty"`
}

// ListSessionsResponse is the body of GET /v1/sessions.
type ListSessionsResponse struct {
	Sessions []*Session `json:"sessions"`
	// Damaged are the sessions of the page whose stored record does not
	// decode: left out of Sessions, they take their places in the page.
	Damaged       []DamagedRecord `json:"damaged,omitempty"`
	NextPageToken string          `json:"next_page_token,omitempty"`
}

// DamagedRecord is a record that a list or a search left out because its
// stored form does not decode: the server logs it and counts it in
// agentmem_damaged_records_total, and a read of it by ID answers 500.
type DamagedRecord struct {
	ID string `json:"id"`
	// Error says why it does not decode.
	Error string `json:"error"`
}

// MaxStepsPerRequest bounds the steps (or messages) of one append.
const MaxStepsPerRequest = 1000

// CreateSessionRequest is the body of POST /v1/sessions. Everything is
// optional; the session's tenant is the API key's.
type CreateSessionRequest struct {
	ID       string            `json:"id,omitempty"`
	UserID   string            `json:"user_id,omitempty"`
	Agent    string            `json:"agent,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Retention is one of the Retention constants; empty means
	// RetentionSession.
	Retention  string `json:"retention,omitempty"`
	TTLSeconds int64  `json:"ttl_seconds,omitempty"`
	// Pinning is what the session's contexts always show; absent means
	// the default pinning (the system prompts, the first task and the
	// newest summary). The session stores the pinning that applies.
	Pinning *Pinning `json:"pinning,omitempty"`
	// AutoCompact has the session compacted automatically; absent:
	// never.
	AutoCompact *AutoCompact `json:"auto_compact,omitempty"`
	// ExtractFacts has facts about the session's user learnt from its
	// turns in the background (true) or not (false); absent: the
	// server's default (serve --extract-facts). True needs a user_id
	// and a server that can extract facts (one with a model:
	// --llm-base-url); otherwise the create is refused (400,
	// field extract_facts).
	ExtractFacts *bool `json:"extract_facts,omitempty"`
}

// ForkRequest is the body of POST /v1/sessions/{id}/fork. The branch gets
// the parent's tenant, user and agent, and, when left out, its metadata,
// retention, pinning, automatic compaction and fact extraction.
type ForkRequest struct {
	// AtSeq is the sequence number to fork at; 0 or absent means the
	// parent's last.
	AtSeq        int64             `json:"at_seq,omitempty"`
	ID           string            `json:"id,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	Retention    string            `json:"retention,omitempty"`
	TTLSeconds   int64             `json:"ttl_seconds,omitempty"`
	Pinning      *Pinning          `json:"pinning,omitempty"`
	AutoCompact  *AutoCompact      `json:"auto_compact,omitempty"`
	ExtractFacts *bool             `json:"extract_facts,omitempty"`
}

// PopResponse is the body of a successful POST /v1/sessions/{id}/pop: the
// message taken off the end of the session's working set.
type PopResponse struct {
	// Seq is the sequence number of the step the message belonged to.
	Seq int64 `json:"seq"`
	// Message is the message, as an OpenAI chat message.
	Message OpenAIMessage `json:"message"`
	// IsError is set when the message is a tool result recorded as an
	// error (OpenAI's tool messages have no field for it).
	IsError bool `json:"is_error,omitempty"`
	// Metadata is the message's metadata: a tool result's own (with
	// is_error "true" for an error), else its step's.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Removed is true when the whole step left the working set; false
	// when the message was one tool result of an action, which stays
	// with that call pending again.
	Removed bool `json:"removed"`
	// CompactionSeq is the sequence number of the compaction entry that
	// records the pop; LastSeq is the session's last sequence number
	// after it (also the ETag).
	CompactionSeq int64 `json:"compaction_seq"`
	LastSeq       int64 `json:"last_seq"`
}
