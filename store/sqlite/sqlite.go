package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/agentmem/agentmem/internal/sqlitedb"
	"github.com/agentmem/agentmem/store"
)

// Options configures a Store. The zero value is a good default.
type Options struct {
	// Clock is the only source of time the store reads: session and entry
	// times, expiry, and the default PruneRequest.Now. Nil means time.Now.
	Clock func() time.Time
	// BusyTimeout is how long a write waits for another process that holds
	// the database's write lock before it fails. Zero means 5s.
	BusyTimeout time.Duration
	// ReadConns is the number of connections that serve reads (Get, List,
	// Read). Zero means 4. Writes always go through one connection.
	ReadConns int
}

// DefaultBusyTimeout is the BusyTimeout of a zero Options.
const DefaultBusyTimeout = sqlitedb.DefaultBusyTimeout

// MemoryPath is the path that opens a private in-memory database, which
// lives as long as the Store: for tests and throwaway runs.
const MemoryPath = sqlitedb.MemoryPath

// Store is a store.Store over one SQLite database file. It is safe for
// concurrent use by many goroutines and, through SQLite's locking, by
// several processes that open the same file on one machine.
type Store struct {
	db *sqlitedb.DB
	// w has exactly one connection: every write transaction goes through
	// it, so the writers of this process queue in Go (honouring their
	// contexts) rather than spinning on SQLite's busy handler.
	w *sql.DB
	// r is the pool that serves reads; WAL lets them run beside a write.
	// For an in-memory database it is w.
	r *sql.DB
	// wStmts and rStmts keep the statements of w and r prepared.
	wStmts, rStmts *stmtCache
	clock          func() time.Time
	// closed is set by Close; operations then fail with store.ErrClosed.
	closed atomic.Bool

	// The group committer (groupcommit.go): appendQ takes appends to it,
	// quit stops it, committerDone is closed when it has stopped.
	appendQ       chan *appendOp
	quit          chan struct{}
	committerDone chan struct{}
}

var _ store.Store = (*Store)(nil)

// Open opens (creating it if needed) the SQLite database at path and
// brings its schema up to date. path is a file name, or MemoryPath. A
// database whose schema is newer than this package knows is refused with
// ErrSchemaTooNew.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: Open: empty path")
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	s := &Store{clock: opts.Clock}
	db, err := sqlitedb.Open(path, sqlitedb.Options{BusyTimeout: opts.BusyTimeout, ReadConns: opts.ReadConns})
	if err != nil {
		return nil, err
	}
	s.db, s.w, s.r = db, db.W, db.R
	s.wStmts, s.rStmts = newStmtCache(s.w), newStmtCache(s.r)
	if err := migrateDB(ctx, s.w); err != nil {
		s.closeDBs()
		return nil, err
	}
	s.appendQ = make(chan *appendOp)
	s.quit = make(chan struct{})
	s.committerDone = make(chan struct{})
	go s.committer()
	return s, nil
}

// Close closes the database. Operations on a closed store fail with
// store.ErrClosed; closing it again does nothing.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	close(s.quit)
	<-s.committerDone // it finishes the batch it is running
	return s.closeDBs()
}

func (s *Store) closeDBs() error {
	if s.wStmts != nil {
		s.wStmts.close()
		s.rStmts.close()
	}
	return s.db.Close()
}

// checkOpen returns store.ErrClosed after Close.
func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

// dbErr turns an error from the database into the store's error: an
// operation that lost a race with Close reports store.ErrClosed, and a
// transient failure (a locked database, a deadline) wraps
// agentmem.ErrUnavailable (sqlitedb.Classify).
func (s *Store) dbErr(op string, err error) error {
	if s.closed.Load() {
		return fmt.Errorf("sqlite: %s: %w", op, store.ErrClosed)
	}
	return fmt.Errorf("sqlite: %s: %w", op, sqlitedb.Classify(err))
}

// now reads the store's clock, at the precision the store keeps (see
// store.Now).
func (s *Store) now() time.Time { return store.Now(s.clock) }
