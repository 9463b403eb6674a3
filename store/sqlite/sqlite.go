package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"time"

	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/internal/sqlitedb"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/internal/sqlstore"
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

// Store is the store.Driver over one SQLite database file. It is safe for
// concurrent use by many goroutines and, through SQLite's locking, by
// several processes that open the same file on one machine.
//
// Its methods are the session store's (store/internal/sqlstore, shared
// with package postgres) but Append (see Append). Its writes go through
// the file's group committer (sqlitedb.Group), which commits them together
// with each other's and with those of the other components in the file.
type Store struct {
	*sqlstore.Store
	db *sqlitedb.DB
	// w has exactly one connection: every write transaction goes through
	// it, so the writers of this process queue in Go (honouring their
	// contexts) rather than spinning on SQLite's busy handler.
	w *sql.DB
	// r is the pool that serves reads; WAL lets them run beside a write.
	// For an in-memory database it is w.
	r *sql.DB
	// group commits the writes to the file, of this store and of the
	// other components that share it.
	group *sqlitedb.Group
	// wStmts and rStmts keep the statements of w and r prepared. SQLite
	// parses and plans a statement in about as much time as a small insert
	// takes to run. Preparing each once saves a large share of an append's
	// CPU time, which bounds group-committed appends.
	// wStmts is the group's, shared by the file's writers.
	wStmts, rStmts *sqldb.StmtCache
	// closed is set when the store closes: its writes fail with
	// store.ErrClosed from then on, though the group goes on for the
	// file's other components.
	closed atomic.Bool
}

var (
	_ store.Driver     = (*Store)(nil)
	_ store.Feed       = (*Store)(nil)
	_ store.Leaser     = (*Store)(nil)
	_ store.Importer   = (*Store)(nil)
	_ store.HeadReader = (*Store)(nil)
)

// Open opens (creating it if needed) the SQLite database at path and
// brings its schema up to date. path is a file name, or MemoryPath. A
// database whose schema is newer than this package knows is refused with
// ErrSchemaTooNew.
//
// The store's Close closes the database; operations on a closed store
// fail with store.ErrClosed, and closing it again does nothing.
func Open(ctx context.Context, path string, opts Options) (*store.Store, error) {
	d, err := OpenDriver(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	return store.New(d), nil
}

// OpenDriver opens the store's driver as Open does, for what is its own
// (Open wraps it in the portable store.Store).
func OpenDriver(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: Open: empty path")
	}
	db, err := sqlitedb.Open(path, sqlitedb.Options{BusyTimeout: opts.BusyTimeout, ReadConns: opts.ReadConns})
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, w: db.W, r: db.R, group: db.Group()}
	s.wStmts, s.rStmts = s.group.Stmts(), sqldb.NewStmtCache(s.r)
	if err := migrateDB(ctx, s.w); err != nil {
		s.closeDBs()
		return nil, err
	}
	s.Store = sqlstore.New(conn{s}, sqlstore.Options{Clock: opts.Clock, OnClose: func() { s.closed.Store(true) }})
	return s, nil
}

// closeDBs closes the read statements and the database: the group, the
// write statements and the connections close with the file's last user. A
// write of the store that is running commits first.
func (s *Store) closeDBs() error {
	s.rStmts.Close()
	return s.db.Close()
}

// conn is the store's sqldb.DB: reads on the pool of readers, writes
// through the file's group committer on the one write connection (BEGIN
// IMMEDIATE), each transaction with the statements of its connection kept
// prepared (sqldb.StmtCache).
type conn struct{ s *Store }

// Dialect implements sqldb.DB.
func (c conn) Dialect() *sqldb.Dialect { return sqlitedb.Dialect }

// Reader implements sqldb.DB.
func (c conn) Reader() sqldb.Querier { return c.s.rStmts.DB() }

// Writer implements sqldb.DB.
func (c conn) Writer() sqldb.Querier { return sqldb.NewSQLiteQuerier(c.s.w) }

// Read implements sqldb.DB: one read transaction, a consistent snapshot
// of the database (WAL keeps it stable while writers commit).
func (c conn) Read(ctx context.Context, fn func(tx sqldb.Tx) error) error {
	s := c.s
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: s.r != s.w})
	if err != nil {
		return err
	}
	defer s.rStmts.Warm(ctx)
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to commit
	return fn(s.rStmts.Tx(tx))
}

// Write implements sqldb.DB: fn runs in a write transaction of the
// file's group committer, possibly shared with other writes (each in a
// savepoint of its own), and its changes are kept if it returns nil. A
// Redoable ctx makes it WriteRedoable.
func (c conn) Write(ctx context.Context, fn func(ctx context.Context, tx sqldb.Tx) error) error {
	s := c.s
	if s.closed.Load() {
		return store.ErrClosed
	}
	err := sqldb.SafeWrite(ctx, fn, func(ctx context.Context, fn func(ctx context.Context, tx sqldb.Tx) error) error {
		write := s.group.Write
		if sqldb.IsRedoable(ctx) {
			write = s.group.WriteRedoable
		}
		return write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			return fn(ctx, s.wStmts.Tx(tx))
		})
	})
	if errors.Is(err, sqlitedb.ErrGroupClosed) {
		return store.ErrClosed
	}
	return err
}

// Close implements sqldb.DB.
func (c conn) Close() error { return c.s.closeDBs() }
