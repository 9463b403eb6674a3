// Package store is the durable home of agent memory: sessions, each with
// an append-only log of steps, in one portable type over several
// backends.
//
// # The portable type and its drivers
//
// Programs use one concrete type, *Store, whatever the backend, in the shape
// of go-cloud's portable types: New builds it over a Driver, the small
// interface a backend implements. Its methods are Create, Get, List and
// Delete for sessions, Append and Read for a session's log, Prune for
// retention and Close, each taking a request struct and returning a response
// struct, so fields can be added without breaking callers. Errors wrap
// agentmem's sentinels (ErrNotFound, ErrConflict, ErrInvalid); a refused call
// changes nothing. Store checks every request before its driver sees it, so
// every backend refuses the same things, and every driver runs the
// conformance suite in package storetest through it, so they all behave the
// same.
//
// A driver may do more than the eight methods of Driver: the change
// feed (Feed), the leases of its consumers (Leaser), where a session's
// log is held (Segmenter), exact import (Importer), readiness (Pinger),
// cheap head reads (HeadReader) and the classes of its own errors
// (ErrorClassifier). New finds them, once; callers ask
// Store.Supports (or Store.Feed) instead of asserting on a type, and a
// method whose capability the driver lacks returns an error matching
// errors.ErrUnsupported (Head falls back to Get). Store.As reaches what
// is a backend's own, such as the connection pool of package postgres.
// Store classifies every error of its driver once: an error that has a
// class keeps it, another gets the class the driver's ErrorClassifier
// gives it (a busy or full database is agentmem.ErrUnavailable), and
// errors.As still finds the driver's own error.
//
// This package is for programs. Backend authors implement Driver with
// the help of package storekit, which holds what every backend shares
// (the rules of an append, the checks of a compaction against the log),
// and prove it with the conformance suite of package storetest.
//
// Backends live in their own packages: memstore (in memory), sqlite (the
// embedded default) and postgres (to scale out). Each registers a URL
// scheme, so a program picks one with a string:
//
//	import (
//		_ "github.com/agentmem/agentmem/store/memstore"
//		_ "github.com/agentmem/agentmem/store/sqlite"
//	)
//
//	st, err := store.Open(ctx, "sqlite:///var/lib/agent/memory.db") // or "mem://", "postgres://..."
//
// # The log
//
// The log is the truth; what a model sees is a view of it. Every entry
// gets the next sequence number of its session (1, 2, 3, ...), assigned by
// the store. A step entry holds one step (agentmem.Step), numbered with its
// sequence number. A compaction entry records what a compaction (a summary,
// pruning, truncation) made of the working set. It holds the sequence
// numbers of the steps now in it, in order (CompactionRecord.Working), and
// the numbers that left it (Removed). Modified copies may stand in for some
// of them (Replaced, such as truncated tool results). The
// steps a compaction covered stay in the log. A compaction entry may
// instead be an amendment (CompactionRecord.Amend): it keeps the working
// set's steps and only replaces some of them by copies, such as a tool
// call completed by a result sent later; it costs what its copies do.
//
// Appends are atomic: all or none. They are idempotent: an idempotency key,
// recorded with the fingerprint of its request in the append's transaction,
// names one request. A retry gets the original answer and stores nothing,
// and another request with the key is refused with ErrIDReused. Step IDs
// are idempotency keys too, which decide where no key was recorded (see
// AppendRequest and storekit.CheckKey). Appends are optionally conditional:
// with ExpectedLastSeq, an append by a writer that has not seen the latest
// entries fails with ErrConflict instead of interleaving silently.
//
// # The working set
//
// A session's working set is what a memory resumed on it holds. It is the
// steps the newest full compaction entry names, followed by every step
// appended after it. Each is replaced by its copy if the full record or an
// amendment after it has one, the newest copy winning (see WorkingSet). A full
// record's copies are the only ones in force after it, so a writer of one
// sends again the copies the working set shows (ReadResponse.Replaced);
// an amendment's apply on top of what came before. Read with
// ReadRequest.WorkingSet returns it, so resuming a long session costs what
// its working set does, not what its whole log does. A compaction record
// names step entries of the log and loses no pinned step by accident:
// every system prompt and the first task (the library's rule) stays in
// the working set unless the record's Removed list names it (see
// storekit.CheckPinned). Every backend checks it in the append's transaction.
//
// OpenMemory binds an agentmem.Memory to a session. It loads the working
// set, then writes every add and compaction through to the log before the
// memory changes (through the agentmem.Journal hook). A process that
// crashes and opens the session again finds exactly the acknowledged steps.
//
// # Messages, item by item
//
// Chat messages appended one at a time, as agent frameworks save them,
// pops and clears are the sessions service's (package sessions): it folds
// them into steps and compaction entries that it appends here.
//
// # Conversations and agents
//
// Conversations is the seeds' ConversationStore over any Store. It saves a
// whole conversation as a compaction, so the log keeps the old content. It
// loads one (empty when missing, as the seed; Get is the strict form), and
// lists, deletes and clears a tenant's conversations. Agents is the
// seeds' MemoryManager.get_memory: each agent of a run gets a memory of its
// own, a session created on first use and shared by every process that
// opens the run. AssignTenant moves a session into a tenant (sessions
// created before the first API key have none).
//
// # Retention
//
// A session's Retention says how long it lives: SingleRun sessions end
// with their run (Bound.Close deletes them), SessionRetention sessions
// live until deleted or expired, Persistent ones until deleted. A TTL
// sets ExpiresAt; an expired session is gone to every reader at once, and
// Prune deletes it. Prune with CoveredBefore also deletes old step
// entries that no working set needs any more, so storage stays bounded
// for long-lived sessions.
//
// # Branches
//
// Create with ParentID forks a session at a sequence number of its parent
// (ForkSeq): the branch sees the parent's log up to and including ForkSeq,
// and its own entries continue at ForkSeq+1. Writes to either never show
// in the other. Deleting a parent first copies the inherited history into
// its branches. Per-agent memories of a multi-agent run are sessions of
// their own (Session.Agent names the agent).
//
// # The change feed
//
// Every backend's driver also implements Feed: every change to every
// session's log (an entry appended, a branch forked, a session deleted),
// recorded by the transaction that makes it and read in commit order after a
// durable cursor. What is derived from the log, such as the recall index
// (recallview.Follower), follows the feed in the background instead of being
// written on the request's path, and catches up after a crash or restart on
// its own. Every backend's driver also implements Leaser, the leases that
// make a consumer exclusive. Of its followers in every process sharing the
// store, only the one holding the lease applies the changes and saves the
// cursor. Another takes over when it stops or its lease expires.
//
// # Moving sessions
//
// Export writes a session as JSONL, and Import recreates it, in the same
// or another store (from SQLite to PostgreSQL and back), with the same
// sequence numbers and the same step JSON, byte for byte. Import needs a
// driver that implements Importer, as every backend's does.
package store
