package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// SQLConn is what *sql.DB, *sql.Tx and *sql.Conn have in common. It is a
// connection of database/sql, or a wrapper of one (a cache of prepared
// statements, say).
type SQLConn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// NewSQLiteQuerier returns a Querier over c, a connection or transaction
// of a SQLite database. It behaves as the Queriers of sqlitedb.SQLDB do,
// which are made by it. It rewrites $N placeholders to ?N before c sees
// the query, and its Row's Scan returns ErrNoRows. It is for a component
// that runs its own transactions on SQLite (its own group committer, or
// statements it keeps prepared) and still writes its queries once.
func NewSQLiteQuerier(c SQLConn) Querier { return sqlQuerier{c} }

// sqlQuerier is a Querier over database/sql.
type sqlQuerier struct{ c SQLConn }

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

// SQLTx returns the database/sql transaction under tx, for what only
// SQLite has. tx must be a Querier of a transaction made by
// NewSQLiteQuerier or a StmtCache, as sqlitedb.SQLDB's are. ok is false
// for any other Tx.
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
