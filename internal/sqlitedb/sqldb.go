package sqlitedb

import (
	"context"
	"database/sql"
	"sync/atomic"

	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/sqldb"
)

// Dialect is SQLite's sqldb.Dialect.
var Dialect = &sqldb.Dialect{
	Name:            sqldb.SQLite,
	Classify:        Classify,
	Transient:       Transient,
	Exhausted:       Exhausted,
	UniqueViolation: uniqueViolation,
	TimeMicros:      true,
}

// SQLDB is a sqldb.DB over an open SQLite database. Reads run on its pool
// of readers and writes through its one write connection. The write
// transactions of many goroutines, and of every component that writes to
// the file, are committed together (DB.Group).
type SQLDB struct {
	db     *DB
	group  *Group
	stmts  *sqldb.StmtCache
	r, w   sqldb.Querier
	closed atomic.Bool
}

var _ sqldb.SQLReader = (*SQLDB)(nil)

// NewSQLDB returns a sqldb.DB over db, which it closes on Close.
func NewSQLDB(db *DB) *SQLDB {
	g := db.Group()
	return &SQLDB{db: db, group: g, stmts: g.Stmts(), r: sqldb.NewSQLiteQuerier(db.R), w: sqldb.NewSQLiteQuerier(db.W)}
}

// OpenSQLDB opens (creating it if needed) the SQLite database at path, or
// MemoryPath, as Open does; the components that open one file share its
// connections. It brings the schema of one component, its migration set,
// up to date, and returns a sqldb.DB over it.
func OpenSQLDB(ctx context.Context, path string, opts Options, set *migrate.Set) (*SQLDB, error) {
	db, err := OpenMigrated(ctx, path, opts, set)
	if err != nil {
		return nil, err
	}
	return NewSQLDB(db), nil
}

// DB returns the database under the SQLDB, for what only SQLite has.
func (s *SQLDB) DB() *DB { return s.db }

// ReadPool implements sqldb.SQLReader.
func (s *SQLDB) ReadPool() *sql.DB { return s.db.R }

// Dialect implements sqldb.DB.
func (s *SQLDB) Dialect() *sqldb.Dialect { return Dialect }

// Reader implements sqldb.DB.
func (s *SQLDB) Reader() sqldb.Querier { return s.r }

// Writer implements sqldb.DB.
func (s *SQLDB) Writer() sqldb.Querier { return s.w }

// Read implements sqldb.DB.
func (s *SQLDB) Read(ctx context.Context, fn func(tx sqldb.Tx) error) error {
	tx, err := s.db.R.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to keep
	return fn(sqldb.NewSQLiteQuerier(tx))
}

// Write implements sqldb.DB through the file's Group. Its transactions
// reuse the statements prepared on the write connection (Group.Stmts).
// After Close it fails with ErrGroupClosed, though the Group goes on for
// the file's other components.
func (s *SQLDB) Write(ctx context.Context, fn func(ctx context.Context, tx sqldb.Tx) error) error {
	if s.closed.Load() {
		return ErrGroupClosed
	}
	return sqldb.SafeWrite(ctx, fn, func(ctx context.Context, fn func(ctx context.Context, tx sqldb.Tx) error) error {
		write := s.group.Write
		if sqldb.IsRedoable(ctx) {
			write = s.group.WriteRedoable
		}
		return write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			return fn(ctx, s.stmts.Tx(tx))
		})
	})
}

// Close implements sqldb.DB: later writes fail, and the database closes
// (the Group, the statements and the connections with the file's last
// DB). A write that is running commits first.
func (s *SQLDB) Close() error {
	s.closed.Store(true)
	return s.db.Close()
}
