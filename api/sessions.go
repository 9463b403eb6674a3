package api

import (
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/store"
)

// Read limits of GET /v1/sessions/{id}/steps.
const (
	DefaultReadLimit = 1000
	MaxReadLimit     = 10000
)

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

// ReadStepsResponse is the body of GET /v1/sessions/{id}/steps.
type ReadStepsResponse struct {
	// Steps are the step entries read, oldest first; each step's number
	// is its sequence number.
	Steps agentmem.StepList `json:"steps"`
	// Compactions are the compaction entries among them.
	Compactions []CompactionEntry `json:"compactions,omitempty"`
	// LastSeq is the session's last sequence number.
	LastSeq int64 `json:"last_seq"`
}

// CompactionEntry is a compaction entry of the log (store.CompactionRecord):
// a full record (the working set after it, the steps it took out and the
// modified copies it put in) or an amendment (Amend: only copies that
// stand in for steps of the working set, such as an action completed by a
// tool result sent later; no working or removed list).
type CompactionEntry struct {
	Seq      int64             `json:"seq"`
	Time     time.Time         `json:"time"`
	Amend    bool              `json:"amend,omitempty"`
	Working  *[]int64          `json:"working,omitempty"`
	Removed  []int64           `json:"removed,omitempty"`
	Replaced agentmem.StepList `json:"replaced,omitempty"`
}

// ListSessionsResponse is the body of GET /v1/sessions.
type ListSessionsResponse struct {
	Sessions []*store.Session `json:"sessions"`
	// Damaged are the sessions of the page whose stored record does not
	// decode: left out of Sessions, they take their places in the page
	// (see store.ListResponse).
	Damaged       []DamagedRecord `json:"damaged,omitempty"`
	NextPageToken string          `json:"next_page_token,omitempty"`
}

// DamagedRecord is a record that a list or a search left out because its
// stored form does not decode (agentmem.ErrDamaged): the server logs it
// and counts it in agentmem_damaged_records_total, and a read of it by ID
// answers 500.
type DamagedRecord struct {
	ID string `json:"id"`
	// Error says why it does not decode.
	Error string `json:"error"`
}

// Damaged returns the wire form of damaged records.
func Damaged(ds []*agentmem.DamagedError) []DamagedRecord {
	if len(ds) == 0 {
		return nil
	}
	out := make([]DamagedRecord, len(ds))
	for i, d := range ds {
		out[i] = DamagedRecord{ID: d.ID, Error: d.Err.Error()}
	}
	return out
}

// MaxStepsPerRequest bounds the steps (or messages) of one append.
const MaxStepsPerRequest = 1000

// CreateSessionRequest is the body of POST /v1/sessions. Everything is
// optional; the session's tenant is the API key's.
type CreateSessionRequest struct {
	ID         string            `json:"id,omitempty"`
	UserID     string            `json:"user_id,omitempty"`
	Agent      string            `json:"agent,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	Retention  store.Retention   `json:"retention,omitempty"`
	TTLSeconds int64             `json:"ttl_seconds,omitempty"`
	// Pinning is what the session's contexts always show; absent means
	// agentmem.DefaultPinning (the system prompts, the first task and
	// the newest summary). The session stores the pinning that applies.
	Pinning *agentmem.Pinning `json:"pinning,omitempty"`
	// AutoCompact has the session compacted automatically (see
	// store.AutoCompact); absent: never.
	AutoCompact *store.AutoCompact `json:"auto_compact,omitempty"`
}

// ForkRequest is the body of POST /v1/sessions/{id}/fork. The branch gets
// the parent's tenant, user and agent, and, when left out, its metadata,
// retention, pinning and automatic compaction.
type ForkRequest struct {
	// AtSeq is the sequence number to fork at; 0 or absent means the
	// parent's last.
	AtSeq       int64              `json:"at_seq,omitempty"`
	ID          string             `json:"id,omitempty"`
	Metadata    map[string]string  `json:"metadata,omitempty"`
	Retention   store.Retention    `json:"retention,omitempty"`
	TTLSeconds  int64              `json:"ttl_seconds,omitempty"`
	Pinning     *agentmem.Pinning  `json:"pinning,omitempty"`
	AutoCompact *store.AutoCompact `json:"auto_compact,omitempty"`
}

// PopResponse is the body of a successful POST /v1/sessions/{id}/pop: the
// message taken off the end of the session's working set.
type PopResponse struct {
	// Seq is the sequence number of the step the message belonged to.
	Seq int64 `json:"seq"`
	// Message is the message, as an OpenAI chat message.
	Message render.OpenAIMessage `json:"message"`
	// IsError is set when the message is a tool result recorded as an
	// error (OpenAI's tool messages have no field for it).
	IsError bool `json:"is_error,omitempty"`
	// Metadata is the message's metadata: a tool result's own
	// (agentmem.ToolResult.Metadata, with is_error "true" for an error),
	// else its step's.
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
