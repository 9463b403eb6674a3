package store

import (
	"context"
	"fmt"
	"time"

	"github.com/agentmem/agentmem"
)

// Driver is what a backend implements: the durable home of sessions,
// each session's metadata and its append-only log. Programs use it
// through the portable Store (New), which checks every request before the
// driver sees it; a
// driver may implement the optional interfaces Feed, Leaser, Segmenter,
// Importer, Pinger, HeadReader and ErrorClassifier too, which New finds.
//
// A session is identified by its tenant and its ID together. Each tenant
// has an ID space of its own, so two tenants may each hold a session
// "run-1". Every request that names a session names its tenant too; the
// empty string is the default tenant, which a single-tenant deployment
// uses. To a request in one tenant, a session of another is
// indistinguishable from a missing one. A branch is created in its
// parent's tenant. Implementations are safe for concurrent use by many
// goroutines and, for the database backends, by many processes.
//
// Errors wrap the agentmem sentinels. ErrNotFound is a missing session.
// ErrConflict is a session ID in use (an *ExistsError), or an append whose
// ExpectedLastSeq does not match; as ErrIDReused, it is also an append that
// reuses step IDs for a different request. ErrInvalid is bad input, which
// changes nothing. ErrUnavailable is a failure of the backend that may
// pass: a busy or unreachable database, a timeout, ErrClosed
// (agentmem.ErrExhausted when it is out of disk space or memory). A session
// whose stored record does not decode is agentmem.ErrDamaged (a
// *agentmem.DamagedError) to the methods that return it or change its log:
// Get, Read, Append, and Create of a branch of it. List leaves it out (see
// ListResponse.Damaged), while Delete and Prune delete it as any other. Any
// other error is one nobody expected, such as a stored entry that does not
// decode. A driver may return its own errors, such as its database's, and
// give their classes in one place, an ErrorClassifier, which the portable
// Store asks. The portable Store checks
// the input of Create, Get, List, Delete and Read before the driver is
// called; Append checks its own with ValidateAppendEncoded, whose
// encodings of the steps it stores.
//
// An expired session (see Session.ExpiresAt) is ErrNotFound to Get, Read,
// Append and List, and to Create as a parent, from the moment it expires,
// whether or not Prune has deleted it yet.
//
// Times a store records (CreatedAt, UpdatedAt, ExpiresAt, Entry.Time) come
// from the store's clock (see storekit.Now), in UTC, truncated to the
// microsecond, the precision every backend keeps. A store returns copies:
// changing a value passed to or returned by a store never changes what it
// holds.
//
// Every backend of this module also implements Importer, which Import
// needs to recreate an exported session exactly, and passes the storetest
// conformance suite through the portable Store.
type Driver interface {
	// Create creates a session in req.Tenant. An ID in use in that tenant,
	// even by an expired session Prune has not deleted yet, is refused
	// with an *ExistsError (ErrConflict), returned as it is; an empty ID
	// gets a new one. A branch of a parent missing from that tenant is
	// ErrNotFound.
	Create(ctx context.Context, req CreateRequest) (*Session, error)
	// Get returns the session of a tenant with this ID.
	Get(ctx context.Context, tenant, id string) (*Session, error)
	// List returns sessions, newest first (CreatedAt descending, then ID
	// descending, then Tenant descending), filtered and paged. Expired
	// sessions are left out, and so are damaged ones (whose stored record
	// does not decode): each is listed in ListResponse.Damaged, in its
	// place on its page, and reported to ctx (agentmem.ReportDamaged).
	List(ctx context.Context, req ListRequest) (*ListResponse, error)
	// Delete deletes a session and its log. Branches of it keep the
	// history they inherited (it is copied into them first), and their
	// ParentID and ForkSeq, as a record of where they came from; a session
	// created later with the deleted one's ID is unrelated to them.
	// Deleting an expired session Prune has not deleted yet succeeds.
	Delete(ctx context.Context, tenant, id string) error
	// Append appends entries to a session's log atomically: all or none.
	Append(ctx context.Context, req AppendRequest) (*AppendResponse, error)
	// Read reads a session's log (a branch sees its parent's history up to
	// the fork point).
	Read(ctx context.Context, req ReadRequest) (*ReadResponse, error)
	// Prune applies retention: deletes expired sessions and, when asked,
	// covered originals older than a cut-off.
	Prune(ctx context.Context, req PruneRequest) (*PruneResponse, error)
	// Close releases the store's resources. Calls after Close fail with
	// ErrClosed.
	Close() error
}

// Retention says how long a session lives.
type Retention string

// Retention policies.
const (
	// SingleRun sessions are deleted when the run that created them ends
	// (Bound.Close) or when they expire.
	SingleRun Retention = "single_run"
	// SessionRetention sessions live until deleted or expired. It is the
	// default.
	SessionRetention Retention = "session"
	// Persistent sessions never expire; only Delete removes them.
	Persistent Retention = "persistent"
)

// Session is a session's metadata.
type Session struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant,omitempty"`
	UserID string `json:"user_id,omitempty"`
	Agent  string `json:"agent,omitempty"`
	// ParentID and ForkSeq describe a branch: it sees the parent's log up
	// to and including sequence number ForkSeq.
	ParentID  string            `json:"parent_id,omitempty"`
	ForkSeq   int64             `json:"fork_seq,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	Retention Retention         `json:"retention"`
	// ExpiresAt is when the session expires (zero: never): CreatedAt +
	// TTL, fixed at creation (appends do not extend it). Persistent
	// sessions never expire.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// LastSeq is the sequence number of the newest entry of the session's
	// log, inherited history included (a new branch starts at ForkSeq).
	LastSeq int64 `json:"last_seq"`
	// Pinning is what the session's contexts always show (see
	// agentmem.Pinning); nil means agentmem.DefaultPinning (see
	// EffectivePinning). Fixed at creation.
	Pinning *agentmem.Pinning `json:"pinning,omitempty"`
	// AutoCompact, when set, has the session's working set compacted
	// automatically (see AutoCompact); nil: never. Fixed at creation.
	AutoCompact *AutoCompact `json:"auto_compact,omitempty"`
	// ExtractFacts, when set, says whether facts about the session's user
	// are learnt from its turns in the background (package
	// views/factextract): true opts the session in, false out; nil
	// leaves it to the server's default. Fixed at creation.
	ExtractFacts *bool `json:"extract_facts,omitempty"`
}

// Key names a session: its tenant and its ID (see Driver on tenants).
type Key struct {
	Tenant string
	ID     string
}

// Key returns the session's key.
func (s *Session) Key() Key { return Key{Tenant: s.Tenant, ID: s.ID} }

// CreateRequest creates a session.
type CreateRequest struct {
	ID string // empty: a new UUIDv7
	// Tenant is the tenant whose ID space the session is created in; a
	// branch's parent is looked up in it too.
	Tenant    string
	UserID    string
	Agent     string
	Metadata  map[string]string
	Retention Retention     // empty: SessionRetention
	TTL       time.Duration // > 0: ExpiresAt = now + TTL (not for Persistent)
	// ParentID and ForkSeq create a branch of an existing session at a
	// sequence number of its log (0 < ForkSeq <= parent's LastSeq; 0
	// means the parent's LastSeq).
	ParentID string
	ForkSeq  int64
	// Pinning, AutoCompact and ExtractFacts are the session's settings
	// (see Session), stored as given: a branch does not take its
	// parent's unless they are passed (sessions.Service.Fork does).
	Pinning      *agentmem.Pinning
	AutoCompact  *AutoCompact
	ExtractFacts *bool
}

// ListRequest filters and pages List. Zero fields do not filter.
type ListRequest struct {
	// Tenant lists only that tenant's sessions; empty lists every
	// tenant's, unless ExactTenant.
	Tenant string
	// ExactTenant lists only Tenant's sessions even when Tenant is the
	// default tenant "" (a caller that serves one tenant sets it: the
	// default tenant's sessions are then read through the index by
	// tenant, not picked out of every tenant's).
	ExactTenant bool
	UserID      string
	Agent       string
	// ParentID lists only the branches created from the session with
	// this ID in the listed tenants (Session.ParentID), not their own
	// branches. ParentID records where a branch came from, so the
	// branches of a deleted session are still listed by its ID. A
	// ParentID that is not a valid session ID is ErrInvalid.
	ParentID  string
	PageSize  int    // 0: 50; larger than 1000: 1000; negative: ErrInvalid
	PageToken string // from a previous ListResponse; a bad one is ErrInvalid
}

// ListResponse is a page of sessions.
type ListResponse struct {
	Sessions []*Session
	// Damaged are the sessions of the page whose stored record does not
	// decode, in List's order, each with its tenant, ID and error. They
	// take their places in the page but are not in Sessions: a page holds
	// at most PageSize sessions and damaged ones together.
	Damaged       []*agentmem.DamagedError
	NextPageToken string // empty on the last page
}

// EntryKind is the kind of a log entry.
type EntryKind string

// Entry kinds.
const (
	// StepEntry carries a step. The step's number is the entry's sequence
	// number.
	StepEntry EntryKind = "step"
	// CompactionEntry records a compaction: the working set after it.
	CompactionEntry EntryKind = "compaction"
)

// Entry is one entry of a session's log.
type Entry struct {
	Seq  int64     `json:"seq"` // assigned by the store
	Kind EntryKind `json:"kind"`
	// Step is set on step entries; Step.Info().Number == Seq.
	Step agentmem.Step `json:"-"`
	// Compaction is set on compaction entries.
	Compaction *CompactionRecord `json:"compaction,omitempty"`
	// Time is when the store appended the entry.
	Time time.Time `json:"time"`
}

// CompactionRecord is the record of a compaction entry, in one of two
// forms. EncodeCompaction gives its JSON form.
//
// A full record (Amend false) is the working set after a compaction: the
// sequence numbers of its steps, in order (Working), and the modified
// copies (such as truncated actions) that stand in place of some of them
// (Replaced). Removed lists the sequence numbers of the steps that left
// the working set. A full record's copies are the only ones in force
// after it: the copies of earlier records apply no more unless it
// carries them again (see ReadResponse.Replaced).
//
// An amendment (Amend true) leaves the working set's steps as they are
// and only replaces some of them by copies (Replaced): a tool call
// completed by its result, or a result popped. It has no Working or
// Removed list. Its copies apply on top of those of the newest full
// record before it and of the amendments between them, a later copy of
// the same step winning, so an amendment costs what its copies do, not
// what the working set does. Each copy must stand in for a step of the
// working set.
//
// A copy keeps the number (its original's sequence number), ID and kind
// of the step it stands in for.
type CompactionRecord struct {
	Amend    bool            `json:"amend,omitempty"`
	Working  []int64         `json:"working"`
	Replaced []agentmem.Step `json:"-"`
	Removed  []int64         `json:"removed,omitempty"`
}

// AppendRequest appends entries to a session's log. A request needs at
// least one step or a compaction, or an idempotency key to check.
//
// An idempotency key (Idempotency) decides first, when the session's
// visible log has a record of it. A request with the recorded fingerprint
// is a retry: it is answered with the recorded seqs and compaction seq and
// stores nothing, whatever ExpectedLastSeq says. A request with another
// fingerprint is refused with an *IDReusedError and stores nothing (see
// storekit.CheckKey). An append with a key that stores entries records the key
// with them, atomically. A request with a key and nothing to append
// (KeyOnly) only checks the key: it answers a retry as above, refuses
// another request as above, and otherwise stores nothing and answers the
// session's LastSeq, Retried false.
//
// Without a key, or with one the log has no record of (entries stored
// before keys were recorded), step IDs make appends idempotent: they are
// the request's idempotency keys (the HTTP API derives them from the
// Idempotency-Key header). A request whose steps are none of them in the
// session's visible log (a
// branch's inherited history included) is a new append. A request whose
// steps are all there, each the same step (SameStep: equal but for Number
// and Time), is a retry. It stores nothing, not even its compaction, which
// the request that stored its steps stored right after them. It succeeds
// whatever ExpectedLastSeq says and reports the existing seqs; its
// CompactionSeq is the seq of the compaction entry right after the newest
// of them. Anything else reuses IDs for a different request, and is refused
// with an *IDReusedError (ErrIDReused, which wraps agentmem.ErrConflict),
// storing nothing. That is a stored step that differs from the request's,
// some steps stored and others not, or a retry whose compaction is not the
// one stored after its steps (see storekit.CheckRetry and
// storekit.CheckRetriedCompaction). A request without steps is
// never a retry. Only steps whose IDs are found are compared, so an
// append of new steps costs nothing more.
type AppendRequest struct {
	// Tenant and SessionID name the session.
	Tenant    string
	SessionID string
	// Steps are appended in order as step entries, each stored with its
	// number set to its sequence number. Steps need IDs, distinct within
	// the request.
	Steps []agentmem.Step
	// Compaction, when set, is appended after Steps as a compaction entry. In
	// a full record, Working may name the new Steps of this request by
	// NewStepRef(i) (a negative placeholder for Steps[i]); its other numbers
	// must be sequence numbers of step entries of the visible log, or the
	// request is ErrInvalid. It must keep the pinned steps of the working set
	// it compacts (every system prompt and the first task) in Working, or
	// name them in Removed to drop them on purpose (see
	// storekit.CheckPinned); otherwise the request is ErrInvalid. The stored
	// record has every placeholder replaced by the step's sequence number. An
	// amendment's copies must each stand in for a step of the session's
	// working set as it is before the append (not for one of the request's
	// new steps), with its ID and kind; otherwise the request is ErrInvalid
	// (see storekit.CheckCompaction).
	Compaction *CompactionRecord
	// ExpectedLastSeq, when set, must equal the session's LastSeq, or the
	// append fails with ErrConflict and changes nothing (a retry passes
	// whatever it says).
	ExpectedLastSeq *int64
	// Idempotency, when set, names the request by an idempotency key and the
	// fingerprint of what it asks to store (see above and storekit.CheckKey).
	// WithStepsKey sets it to StepsFingerprint's, from the encodings of
	// Steps, which the request then carries so that the store does not
	// encode the steps again.
	Idempotency *Idempotency

	// encoded holds the encodings of Steps when WithStepsKey made them.
	encoded *encodedSteps
}

// NewStepRef is the placeholder for AppendRequest.Steps[i] in a
// compaction's Working list.
func NewStepRef(i int) int64 { return -int64(i) - 1 }

// AppendResponse reports what an append stored.
type AppendResponse struct {
	// Seqs are the sequence numbers of the request's steps, in order
	// (existing ones for steps that were already stored).
	Seqs []int64
	// CompactionSeq is the sequence number of the compaction entry, if any.
	CompactionSeq int64
	// LastSeq is the session's LastSeq after the append.
	LastSeq int64
	// Retried reports that the request was a retry of one stored before
	// (by its idempotency key or its step IDs): it stored nothing.
	Retried bool
}

// ReadRequest reads a session's log. With WorkingSet, the result is the
// working set as of the end of the log: the steps named by the newest full
// compaction followed by every step after it, replaced ones by their copies
// (see WorkingSet). Otherwise it is the entries with After < Seq, in order:
// at most Limit of them (0: all), or the last Last of them.
// Negative values, Limit with Last, and WorkingSet with any of the others
// are ErrInvalid.
type ReadRequest struct {
	// Tenant and SessionID name the session.
	Tenant     string
	SessionID  string
	After      int64
	Limit      int
	Last       int
	WorkingSet bool
}

// ReadResponse is what Read returns.
type ReadResponse struct {
	Session *Session
	// Entries are log entries (not with WorkingSet).
	Entries []Entry
	// Steps is the working set (with WorkingSet).
	Steps []agentmem.Step
	// Replaced, with WorkingSet, lists the sequence numbers of the steps
	// of Steps that are modified copies, in working-set order: those of
	// the newest full compaction and of the amendments after it (see
	// ReplacedSeqs). A writer that writes a full compaction must send
	// those copies again in its record's Replaced list, or the originals
	// come back: a full record's copies replace every earlier one. An
	// amendment need not: it changes only the copies it carries.
	Replaced []int64
}

// PruneRequest asks for retention to be applied.
type PruneRequest struct {
	// Now is the time to judge expiry by; zero means the store's clock.
	// Expired sessions are deleted as Delete would (their branches keep
	// their inherited history).
	Now time.Time
	// CoveredBefore, when set, also deletes the step entries that are no
	// longer in their session's working set (covered by a summary or
	// pruned) and were appended (Entry.Time) before it. A step that the
	// working set of any session names is kept: every step of the newest
	// full compaction's Working list (replaced originals included), every
	// step after it (amended ones included), and steps a branch inherited
	// and still has in its working set. Compaction entries are kept.
	CoveredBefore time.Time
}

// PruneResponse reports what Prune deleted.
type PruneResponse struct {
	// SessionsDeleted counts the expired sessions deleted.
	SessionsDeleted int
	// Deleted are the expired sessions deleted, as they were, so that
	// what is derived from them (such as a recall index) can be deleted
	// too.
	Deleted []Session
	// EntriesDeleted counts the covered step entries deleted from the
	// sessions that remain (not the entries of deleted sessions).
	EntriesDeleted int
}

// Limits on input, checked before a request reaches a backend.
const (
	MaxIDLen     = 256     // a session ID, in bytes
	MaxStepBytes = 4 << 20 // a step's JSON encoding
)

// ErrClosed is returned by a store used after Close. It wraps
// agentmem.ErrUnavailable: a server whose store is closed is shutting
// down, and the call may succeed on another instance or after a restart.
var ErrClosed = fmt.Errorf("store: closed (%w)", agentmem.ErrUnavailable)

// Pinger is implemented by stores that can tell whether they can serve, as a
// server's readiness asks (every backend of this module does). Ping checks
// that the backend answers and can write, not that any record decodes: it
// returns nil, ErrClosed after Close, or an error wrapping
// agentmem.ErrUnavailable (agentmem.ErrExhausted while the backend is out of
// disk space or memory).
type Pinger interface {
	Ping(ctx context.Context) error
}

// A Segment is a run of a session's visible log held in the log of
// Session (the session itself, or a session it inherits from): the
// entries with After < Seq <= Through. Through is 0 for the session's own
// segment, which has no upper bound.
type Segment struct {
	Session        string
	After, Through int64
}

// Segmenter is implemented by stores that tell where a session's visible
// log is held (every backend of this module does). A branch reads its
// history up to the fork point from its parent's log, which may read part
// of it from its own parent's; Delete hands a deleted session's part to
// its branches. Something derived from the logs, such as a recall index
// holding each session's own entries once, finds a session's history
// through its segments.
type Segmenter interface {
	// Segments returns the segments of the session's visible log, its
	// own first, then older ones: disjoint runs of sequence numbers, in
	// decreasing order. A missing or expired session is ErrNotFound.
	Segments(ctx context.Context, tenant, id string) ([]Segment, error)
}
