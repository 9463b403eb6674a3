package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentmem/agentmem/internal/sqlitedb"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLiteDialect is SQLite's dialect.
var SQLiteDialect = &Dialect{
	Name:            SQLite,
	Classify:        sqlitedb.Classify,
	UniqueViolation: sqliteUnique,
	timeMicros:      true,
}

func sqliteUnique(err error) (string, bool) {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return se.Error(), true
		}
	}
	return "", false
}

// SQLiteDB is a DB over an open SQLite database: reads on its pool of
// readers, writes through its one write connection, the write
// transactions of many goroutines committed together (sqlitedb.Group).
type SQLiteDB struct {
	db    *sqlitedb.DB
	group *sqlitedb.Group
	stmts *stmtCache
	r, w  sqlQuerier
}

// NewSQLite returns a DB over db, which it closes on Close.
func NewSQLite(db *sqlitedb.DB) *SQLiteDB {
	return &SQLiteDB{db: db, group: sqlitedb.NewGroup(db.W), stmts: newStmtCache(db.W), r: sqlQuerier{db.R}, w: sqlQuerier{db.W}}
}

// SQLite returns the database under the DB, for what only SQLite has.
func (s *SQLiteDB) SQLite() *sqlitedb.DB { return s.db }

// Dialect implements DB.
func (s *SQLiteDB) Dialect() *Dialect { return SQLiteDialect }

// Reader implements DB.
func (s *SQLiteDB) Reader() Querier { return s.r }

// Writer implements DB.
func (s *SQLiteDB) Writer() Querier { return s.w }

// Read implements DB.
func (s *SQLiteDB) Read(ctx context.Context, fn func(tx Tx) error) error {
	tx, err := s.db.R.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to keep
	return fn(sqlQuerier{tx})
}

// Write implements DB. Its transactions reuse the statements prepared on
// the write connection (stmtCache).
func (s *SQLiteDB) Write(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	err := guarded(ctx, fn, func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
		return s.group.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			return fn(ctx, cachedTx{tx, s.stmts})
		})
	})
	s.stmts.warm(context.WithoutCancel(ctx))
	return err
}

// Close implements DB: it stops the group writer, closes the prepared
// statements and closes the database.
func (s *SQLiteDB) Close() error {
	s.group.Close()
	s.stmts.close()
	return s.db.Close()
}

// sqlConn is what *sql.DB and *sql.Tx have in common.
type sqlConn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// sqlQuerier is a Querier over database/sql.
type sqlQuerier struct{ c sqlConn }

func (q sqlQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return rowsAffected(q.c.ExecContext(ctx, rebind(query), args...))
}

// rowsAffected is the result of Exec.
func rowsAffected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("sqldb: rows affected: %w", err)
	}
	return n, nil
}

func (q sqlQuerier) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	rows, err := q.c.QueryContext(ctx, rebind(query), args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (q sqlQuerier) QueryRow(ctx context.Context, query string, args ...any) Row {
	return sqlRow{q.c.QueryRowContext(ctx, rebind(query), args...)}
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }

type sqlRow struct{ *sql.Row }

func (r sqlRow) Scan(dest ...any) error {
	if err := r.Row.Scan(dest...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoRows
		}
		return err
	}
	return nil
}

// SQLTx returns the database/sql transaction under tx, a transaction of
// a SQLiteDB, for what only SQLite has; ok is false for any other Tx.
func SQLTx(tx Tx) (*sql.Tx, bool) {
	switch q := tx.(type) {
	case cachedTx:
		return q.tx, true
	case sqlQuerier:
		t, ok := q.c.(*sql.Tx)
		return t, ok
	}
	return nil, false
}
