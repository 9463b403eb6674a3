package sqldb

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// SQLConn is what *sql.DB, *sql.Tx and *sql.Conn have in common: a
// connection of database/sql, or a wrapper of one (a cache of prepared
// statements, say).
type SQLConn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// NewSQLiteQuerier returns a Querier over c, a connection or transaction
// of a SQLite database, that behaves as the Queriers of a SQLiteDB do: it
// rewrites $N placeholders to ?N before c sees the query, and its Row's
// Scan returns ErrNoRows. It is for a component that runs its own
// transactions on SQLite (its own group committer, or statements it keeps
// prepared) and still writes its queries once.
func NewSQLiteQuerier(c SQLConn) Querier { return sqlQuerier{c} }

// PgxConn is what *pgxpool.Pool, *pgxpool.Conn, *pgx.Conn and pgx.Tx have
// in common.
type PgxConn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// NewPgxQuerier returns a Querier over c, as the Queriers of a PostgresDB
// are: for a component that runs statements on a connection it holds (a
// transaction begun in a pipeline of its own, say).
func NewPgxQuerier(c PgxConn) Querier { return pgQuerier{c} }
