package store

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/agentmem/agentmem"
)

// Feed is a store's change feed: every change to every session's log, in
// the order the changes were committed. What is derived from the log (a
// recall index, extracted facts) follows it in the background instead of
// being written in the request that appended. Every backend
// implements it and passes the Feed part of the storetest conformance
// suite.
//
// A consumer keeps a durable cursor (LoadCursor, SaveCursor) and reads
// the changes after it in batches (ReadFeed). Reading is at-least-once: a
// consumer that crashes after applying a batch but before saving its
// cursor reads the batch again, so applying a change must be idempotent.
// Applied in order, the changes converge: each names a session (and an
// entry) whose state the consumer reads as it is now, so a consumer that
// has read every change up to the head holds what the log holds.
//
// Changes are recorded by the same transaction that makes them: a change
// is in the feed exactly when it is committed, and a crash can lose
// neither.
type Feed interface {
	// ReadFeed returns the changes after req.After, oldest first.
	ReadFeed(ctx context.Context, req FeedRequest) (*FeedResponse, error)
	// FeedHead returns the watermark below which every change committed
	// before the call lies: a consumer whose FeedResponse.Through has
	// reached it has read them all (read-your-writes).
	FeedHead(ctx context.Context) (int64, error)
	// LoadCursor returns the cursor a consumer saved last, or the zero
	// cursor (the start of the feed) if it never saved one.
	LoadCursor(ctx context.Context, consumer string) (FeedCursor, error)
	// SaveCursor saves a consumer's cursor durably. A cursor behind the
	// one saved is ignored, so two processes following one feed under the
	// same name never move it back.
	//
	// The feed keeps a change until every consumer with a saved cursor
	// has read it; changes behind them all may be trimmed. So a new
	// consumer registers by saving the zero cursor before its first read,
	// and a consumer that is retired for good holds the feed back until
	// DropCursor removes its cursor.
	SaveCursor(ctx context.Context, consumer string, c FeedCursor) error
	// DropCursor removes a retired consumer's cursor, so that it no
	// longer holds the feed back, and trims the changes every remaining
	// consumer has read. Dropping a cursor that was never saved does
	// nothing. A consumer that reads again after it starts over, from
	// the oldest change kept.
	DropCursor(ctx context.Context, consumer string) error
}

// FeedCursor is a position in a store's feed: just after the change
// read last. Its fields are the backend's own ordering (a transaction
// and a position in it); the zero cursor is the start of the feed.
type FeedCursor struct {
	Tx  int64 `json:"tx,omitempty"`
	Pos int64 `json:"pos"`
}

// FeedRequest reads a store's feed.
type FeedRequest struct {
	// After is the cursor to read after; zero is the start of the feed.
	After FeedCursor
	// Limit bounds the changes returned: 0 means 256, at most 10,000.
	Limit int
	// WithoutEntries leaves every change's Entry (and Err) nil, for a
	// consumer that needs only which sessions changed and how they are
	// now: the store then neither reads nor decodes the entries.
	WithoutEntries bool
}

// Limits of FeedRequest.
const (
	DefaultFeedLimit = 256
	MaxFeedLimit     = 10000
)

// FeedResponse is a batch of changes.
type FeedResponse struct {
	// Changes are the changes read, in commit order.
	Changes []Change
	// Next is the cursor after them (After, when there are none).
	Next FeedCursor
	// Through is the feed's watermark after this read: every change whose
	// watermark is below it has been returned, by this read or by those
	// before it on the same chain of cursors. Compare it with FeedHead.
	Through int64
	// More says that more changes were ready: read again at once.
	More bool
}

// ChangeKind is what a change did.
type ChangeKind string

// Change kinds.
const (
	// ChangeAppend is an entry appended to a session's log, by Append or
	// Import, or an entry Delete copied from a deleted session into a
	// branch of it: visible there before, it is now the branch's own
	// (see Segmenter).
	ChangeAppend ChangeKind = "append"
	// ChangeFork is a branch created: it inherits its parent's log up to
	// Seq (its ForkSeq), which is now part of its own visible log.
	ChangeFork ChangeKind = "fork"
	// ChangeDelete is a session deleted, by Delete or by Prune when it
	// expired: everything derived from it should go.
	ChangeDelete ChangeKind = "delete"
)

// Change is one change of a store's feed.
type Change struct {
	Kind ChangeKind
	// SessionID and Tenant name the session changed.
	SessionID string
	Tenant    string
	// Seq is the appended entry's sequence number (ChangeAppend), or the
	// branch's fork point (ChangeFork).
	Seq int64
	// Time is when the change was recorded: by the database's clock for
	// the database backends, the store's clock for the in-memory one.
	Time time.Time
	// Session is the session as it is now, shared by the changes of one
	// session in a batch; nil when it is gone (deleted or expired since).
	// A later session with the same ID may be there instead: the feed
	// then holds that one's changes too, after these.
	Session *Session
	// Entry is the appended entry as it is now (ChangeAppend), nil when
	// it is gone (its session was deleted, or Prune removed it).
	Entry *Entry
	// Err is set, and Entry nil, when the entry is stored but cannot be
	// read (a corrupt row): the consumer decides whether to skip it.
	Err error
}

// ValidateFeed checks a FeedRequest and returns its limit.
func ValidateFeed(req FeedRequest) (int, error) {
	switch {
	case req.Limit < 0 || req.Limit > MaxFeedLimit:
		return 0, fmt.Errorf("store: feed limit %d is not between 0 and %d: %w", req.Limit, MaxFeedLimit, agentmem.ErrInvalid)
	case req.After.Tx < 0 || req.After.Pos < 0:
		return 0, fmt.Errorf("store: feed cursor %+v is negative: %w", req.After, agentmem.ErrInvalid)
	case req.Limit == 0:
		return DefaultFeedLimit, nil
	}
	return req.Limit, nil
}

// validateSaveCursor checks SaveCursor's arguments: the consumer's name
// and a cursor that is not negative.
func validateSaveCursor(consumer string, c FeedCursor) error {
	if err := validateConsumer(consumer); err != nil {
		return err
	}
	_, err := ValidateFeed(FeedRequest{After: c})
	return err
}

// consumerPattern is what a feed consumer's name may look like: a name an
// operator gives a follower (the recall index's "recall"), kept to
// letters, digits and ._:- so that it reads the same in every log and
// metric.
var consumerPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)

// validateConsumer checks the name of a feed consumer: 1 to 64
// characters from [A-Za-z0-9._:-], the first a letter or digit.
func validateConsumer(name string) error {
	if len(name) > 64 {
		return fmt.Errorf("store: feed consumer name is longer than 64 bytes: %w", agentmem.ErrInvalid)
	}
	if !consumerPattern.MatchString(name) {
		return fmt.Errorf("store: feed consumer name %.80q: 1 to 64 characters from [A-Za-z0-9._:-], the first a letter or digit: %w", name, agentmem.ErrInvalid)
	}
	return nil
}
