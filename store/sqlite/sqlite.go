package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/agentmem/agentmem/store"

	_ "modernc.org/sqlite" // the pure-Go driver, registered as "sqlite"
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
const DefaultBusyTimeout = 5 * time.Second

// MemoryPath is the path that opens a private in-memory database, which
// lives as long as the Store: for tests and throwaway runs.
const MemoryPath = ":memory:"

// Store is a store.Store over one SQLite database file. It is safe for
// concurrent use by many goroutines and, through SQLite's locking, by
// several processes that open the same file on one machine.
type Store struct {
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
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = DefaultBusyTimeout
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = 4
	}
	s := &Store{clock: opts.Clock}
	var err error
	if path == MemoryPath {
		// One connection for everything: each connection to ":memory:"
		// would be a database of its own.
		s.w, err = sql.Open("sqlite", "file::memory:?"+dsnParams(opts, true, false))
		if err != nil {
			return nil, fmt.Errorf("sqlite: open: %w", err)
		}
		s.w.SetMaxOpenConns(1)
		s.w.SetMaxIdleConns(1)
		s.w.SetConnMaxLifetime(0)
		s.w.SetConnMaxIdleTime(0)
		s.r = s.w
	} else {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
		name := "file:" + (&url.URL{Path: abs}).EscapedPath()
		if s.w, err = sql.Open("sqlite", name+"?"+dsnParams(opts, false, false)); err != nil {
			return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
		s.w.SetMaxOpenConns(1)
		s.w.SetMaxIdleConns(1)
		s.w.SetConnMaxLifetime(0)
		s.w.SetConnMaxIdleTime(0)
		if s.r, err = sql.Open("sqlite", name+"?"+dsnParams(opts, false, true)); err != nil {
			s.w.Close()
			return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
		s.r.SetMaxOpenConns(opts.ReadConns)
		s.r.SetMaxIdleConns(opts.ReadConns)
	}
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

// dsnParams returns the driver parameters of a connection. Every
// connection gets:
//
//   - busy_timeout: a write that finds another process's write lock waits
//     (up to BusyTimeout) instead of failing at once with SQLITE_BUSY;
//   - journal_mode=WAL: readers never block the writer nor the writer the
//     readers, and a commit is one sequential append to the WAL;
//   - synchronous=FULL: the WAL is fsynced at every commit, so an
//     acknowledged append survives a power loss, not only a process crash
//     (NORMAL would risk the last commits on power loss);
//   - foreign_keys=ON: entries cannot outlive their session and a session
//     cannot be deleted while another reads its log through it.
//
// Write connections begin every transaction with BEGIN IMMEDIATE
// (_txlock): a transaction that will write takes the write lock when it
// starts, so two writers never both read and then deadlock upgrading
// their locks; the loser waits on busy_timeout. Read connections are
// query_only.
func dsnParams(opts Options, memory, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10)+")")
	if !memory {
		q.Add("_pragma", "journal_mode(WAL)")
	}
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Add("_pragma", "mmap_size(268435456)")
	if readOnly {
		q.Add("_pragma", "query_only(ON)")
	} else {
		q.Set("_txlock", "immediate")
	}
	return q.Encode()
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
	var errR error
	if s.r != nil && s.r != s.w {
		errR = s.r.Close()
	}
	errW := s.w.Close()
	if err := errors.Join(errW, errR); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// checkOpen returns store.ErrClosed after Close.
func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

// dbErr turns an error from the database into the store's error: an
// operation that lost a race with Close reports store.ErrClosed.
func (s *Store) dbErr(op string, err error) error {
	if s.closed.Load() {
		return fmt.Errorf("sqlite: %s: %w", op, store.ErrClosed)
	}
	return fmt.Errorf("sqlite: %s: %w", op, err)
}

// now reads the store's clock, at the precision the store keeps (see
// store.Now).
func (s *Store) now() time.Time { return store.Now(s.clock) }
