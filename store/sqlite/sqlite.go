package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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

// Store is a store.Store over one SQLite database file. It is safe for
// concurrent use by many goroutines and, through SQLite's locking, by
// several processes that open the same file on one machine.
//
// Its methods are the session store's (store/internal/sqlstore, shared
// with package postgres) but Append, which goes through the store's group
// committer (see Append).
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
	// wStmts and rStmts keep the statements of w and r prepared: SQLite
	// parses and plans a statement in about as much time as a small insert
	// takes to run, so preparing each once saves a large share of an
	// append's CPU time, which is what bounds group-committed appends.
	wStmts, rStmts *sqldb.StmtCache

	// The group committer (groupcommit.go): appendQ takes appends to it,
	// quit stops it, committerDone is closed when it has stopped.
	appendQ       chan *appendOp
	quit          chan struct{}
	committerDone chan struct{}
}

var (
	_ store.Store      = (*Store)(nil)
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
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: Open: empty path")
	}
	db, err := sqlitedb.Open(path, sqlitedb.Options{BusyTimeout: opts.BusyTimeout, ReadConns: opts.ReadConns})
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, w: db.W, r: db.R}
	s.wStmts, s.rStmts = sqldb.NewStmtCache(s.w), sqldb.NewStmtCache(s.r)
	if err := migrateDB(ctx, s.w); err != nil {
		s.closeDBs()
		return nil, err
	}
	s.Store = sqlstore.New(conn{s}, sqlstore.Options{Clock: opts.Clock, OnClose: s.stopCommitter})
	s.appendQ = make(chan *appendOp)
	s.quit = make(chan struct{})
	s.committerDone = make(chan struct{})
	go s.committer()
	return s, nil
}

// stopCommitter stops the committer once it has finished the batch it is
// running: appends after it fail with store.ErrClosed.
func (s *Store) stopCommitter() {
	close(s.quit)
	<-s.committerDone
}

func (s *Store) closeDBs() error {
	s.wStmts.Close()
	s.rStmts.Close()
	return s.db.Close()
}

// conn is the store's sqldb.DB: reads on the pool of readers, writes
// through the one write connection (BEGIN IMMEDIATE), each transaction
// with the statements of its connection kept prepared (sqldb.StmtCache).
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

// Write implements sqldb.DB: a write transaction on the writer
// connection, committed if fn returns nil.
func (c conn) Write(ctx context.Context, fn func(ctx context.Context, tx sqldb.Tx) error) error {
	s := c.s
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer s.wStmts.Warm(ctx)
	if err := fn(ctx, s.wStmts.Tx(tx)); err != nil {
		tx.Rollback() //nolint:errcheck // the error that matters is fn's
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Close implements sqldb.DB.
func (c conn) Close() error { return c.s.closeDBs() }
