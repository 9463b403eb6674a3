// Package sqlstore is the session store (store.Store, store.Feed and
// store.Importer) written once over internal/sqldb, for the SQLite and
// PostgreSQL backends (store/sqlite, store/postgres; Citus is
// PostgreSQL here).
//
// Everything the two backends do alike lives here. That is the sessions
// table and its scanning, and Create, Get, List and Delete (a deleted
// session's history handed to its branches). It is the segments of a
// branch's visible log, and appends: the step-ID lookup and its retry
// checks, the compaction checks (references, amendments, pinned steps), and
// the numbering and encoding of new entries. It is also Read and the
// working set, Prune and its covered-steps retention, the change feed's
// reading and cursors, and Import. What the databases spell differently is
// in one place, the dialect (dialect.go). That is list parameters
// (json_each or arrays) and row locks (none on SQLite, whose writers are
// serialized). It is how a time is stored (INTEGER nanoseconds or
// timestamptz), who writes the feed (SQLite's triggers or PostgreSQL's
// statements) and the feed's ordering (an AUTOINCREMENT position or
// transaction IDs).
//
// What really differs stays in the backends: how an append reaches the
// database (SQLite's group committer, which calls AppendTx; PostgreSQL's
// pipelined transaction, which calls PlanAppend), SQLite's transactions
// on statements kept prepared (sqldb.StmtCache), PostgreSQL's COPY for
// Import (Options.InsertEntries), and opening, migrating and closing the
// database.
package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storekit"
)

// Options configures New.
type Options struct {
	// Clock is the only source of time the store reads. Nil means
	// time.Now.
	Clock func() time.Time
	// InsertEntries, when set, inserts an imported session's entries in
	// place of one INSERT per entry (PostgreSQL's COPY). The feed's rows
	// for them are the store's to write, not its.
	InsertEntries func(ctx context.Context, tx sqldb.Tx, tenant, id string, rows []EntryRow) error
	// OnClose runs when the store is closed, before its DB is: a backend
	// stops what writes through the DB (SQLite's committer).
	OnClose func()
}

// Store is the session store over a sqldb.DB. Its methods are those of
// store.Store but Append (which each backend makes its own way, with
// AppendTx or PlanAppend), of store.Feed, store.Importer and
// store.ErrorClassifier.
type Store struct {
	db     sqldb.DB
	d      *dialect
	clock  func() time.Time
	opts   Options
	closed atomic.Bool
	// exhausted is the newest error of an operation that failed for want
	// of disk space or memory (agentmem.ErrExhausted), until Ping finds
	// that the store can write again.
	exhausted atomic.Pointer[error]
}

// New returns a Store over db, whose schema the backend has migrated.
// Close closes db.
func New(db sqldb.DB, opts Options) *Store {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &Store{db: db, d: dialectOf(db.Dialect()), clock: opts.Clock, opts: opts}
}

// Close closes the store: OnClose runs, then the DB closes. Operations
// on a closed store fail with store.ErrClosed; closing it again does
// nothing.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.opts.OnClose != nil {
		s.opts.OnClose()
	}
	return s.db.Close()
}

// The helpers below are for the backends. They are functions, not
// methods, so that a backend's Store, which embeds *Store, has no methods
// but the store's.

// CheckOpen returns store.ErrClosed after Close.
func CheckOpen(s *Store) error { return s.checkOpen() }

// Now reads the store's clock, at the precision the store keeps (see
// storekit.Now).
func Now(s *Store) time.Time { return s.now() }

// Err turns an error of op into the store's error: see Store.err.
func Err(s *Store, op string, err error) error { return s.err(op, err) }

// NotFound is the error for a missing (or expired) session.
func NotFound(s *Store, id string) error { return s.notFound(id) }

func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

func (s *Store) now() time.Time { return storekit.Now(s.clock) }

// IsStoreErr reports whether err is one of the contract's errors
// (ErrNotFound, ErrConflict, ErrInvalid, store.ErrClosed), which pass
// through unchanged.
func IsStoreErr(err error) bool { return isStoreErr(err) }

func isStoreErr(err error) bool {
	return errors.Is(err, agentmem.ErrNotFound) || errors.Is(err, agentmem.ErrConflict) ||
		errors.Is(err, agentmem.ErrInvalid) || errors.Is(err, store.ErrClosed)
}

// err is an error of op as the store returns it, for the portable
// store.Store to classify (see ClassifyError). The contract's errors pass
// through. An operation that lost a race with Close reports
// store.ErrClosed. A unique violation is ErrConflict, a *uniqueError that
// names neither the backend nor its tables: two creators of one session
// ID, which the checks make impossible short of a race or a bug. Any
// other error is wrapped with the backend's name and op, and one for want
// of room is remembered for Ping.
func (s *Store) err(op string, err error) error {
	if err == nil || isStoreErr(err) {
		return err
	}
	if s.closed.Load() {
		return fmt.Errorf("%s: %s: %w (%v)", s.d.name, op, store.ErrClosed, err)
	}
	if _, ok := s.d.UniqueViolation(err); ok {
		return &uniqueError{op: op, err: err}
	}
	err = fmt.Errorf("%s: %s: %w", s.d.name, op, err)
	if s.d.Exhausted(err) {
		s.exhausted.Store(&err)
	}
	return err
}

// ClassifyError implements store.ErrorClassifier. A failure of the
// database that may pass (Dialect.Transient: a locked database, a lost
// connection, a server shutting down, a deadlock that outlived the
// retries, a timeout) is agentmem.ErrUnavailable, and one for want of disk
// space or memory agentmem.ErrExhausted. Anything else is a failure nobody
// expected.
func (s *Store) ClassifyError(err error) error {
	switch {
	case s.d.Exhausted(err):
		return agentmem.ErrExhausted
	case s.d.Transient(err):
		return agentmem.ErrUnavailable
	}
	return nil
}

// Ping reports whether the store can serve, as a server's readiness asks: its
// database answers a query. After an operation failed for want of disk space
// or memory, a probe write must succeed too. The probe is a feed cursor that
// no consumer can have, written and deleted in one transaction, so no other
// transaction sees it. Its name needs room on SQLite (see the dialect's
// pingConsumer). So the store is ready again once there is room, without
// waiting for a client's write. It returns nil, store.ErrClosed, or the
// database's error, which ClassifyError makes agentmem.ErrUnavailable:
// agentmem.ErrExhausted while writes still fail for want of room.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	var one int
	if err := s.db.Reader().QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return s.err("ping", err)
	}
	failed := s.exhausted.Load()
	if failed == nil {
		return nil
	}
	f := &s.d.feed
	err := s.write(ctx, "ping", func(tx sqldb.Tx) error {
		if _, err := tx.Exec(ctx, f.saveCursor, s.d.pingConsumer, "0", 0); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, f.dropCursor, s.d.pingConsumer)
		return err
	})
	if err != nil {
		return err
	}
	s.exhausted.CompareAndSwap(failed, nil)
	return nil
}

// uniqueError is a unique violation (see Store.err), an error of the
// contract: its message is the store's, without the database's (which
// names tables, in the backend's words), and errors.As still finds the
// driver's error.
type uniqueError struct {
	op  string
	err error
}

func (e *uniqueError) Error() string {
	return e.op + ": another request wrote the same record at the same time: " + agentmem.ErrConflict.Error()
}

// Unwrap makes errors.Is(err, agentmem.ErrConflict) true, and errors.As
// find the driver's error.
func (e *uniqueError) Unwrap() []error { return []error{agentmem.ErrConflict, e.err} }

// notFound is an error of the contract, which transports
// show to their clients: they say what is wrong and do not name the
// backend (its failures, which are only logged, do).
func (s *Store) notFound(id string) error {
	return fmt.Errorf("session %q: %w", id, agentmem.ErrNotFound)
}

// checkText refuses a text value the database cannot store as
// ErrInvalid, before any SQL runs: PostgreSQL's text has no room for the
// byte 0, which is valid UTF-8 and so passes the store's own checks. On
// SQLite it is nil.
func (s *Store) checkText(field, v string) error {
	if s.d.noNUL && strings.IndexByte(v, 0) >= 0 {
		return &agentmem.InvalidError{Field: field, Reason: "contains the byte 0, which this store's text cannot hold"}
	}
	return nil
}

// checkSessionText refuses tenant, user and agent names the database
// cannot store (see CheckText).
func (s *Store) checkSessionText(tenant, userID, agent string) error {
	for _, f := range []struct{ name, v string }{{"tenant", tenant}, {"user_id", userID}, {"agent", agent}} {
		if err := s.checkText(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// write runs fn in a write transaction (DB.Write: on PostgreSQL run
// again when the server aborts it for a deadlock, so fn must set its
// results afresh each time) and maps its error.
func (s *Store) write(ctx context.Context, op string, fn func(tx sqldb.Tx) error) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	return s.err(op, s.db.Write(ctx, func(_ context.Context, tx sqldb.Tx) error { return fn(tx) }))
}

// read runs fn in a read-only transaction, one snapshot of the database,
// and maps its error.
func (s *Store) read(ctx context.Context, op string, fn func(tx sqldb.Tx) error) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	return s.err(op, s.db.Read(ctx, fn))
}
