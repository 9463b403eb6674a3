package sqldb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/agentmem/internal/pgdb"
)

// PostgresDialect is PostgreSQL's dialect (and Citus's).
var PostgresDialect = &Dialect{
	Name:            Postgres,
	Classify:        pgdb.Classify,
	UniqueViolation: pgUnique,
}

func pgUnique(err error) (string, bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return pgErr.Message, true
	}
	return "", false
}

// MaxAttempts is how many times Write runs a transaction that PostgreSQL
// aborts for a deadlock or a serialization failure.
const MaxAttempts = 3

// PostgresDB is a DB over a pgx pool.
type PostgresDB struct {
	pool *pgxpool.Pool
	q    pgQuerier
}

// NewPostgres returns a DB over pool, which it closes on Close.
func NewPostgres(pool *pgxpool.Pool) *PostgresDB {
	return &PostgresDB{pool: pool, q: pgQuerier{pool}}
}

// Pool returns the pool under the DB, for what only PostgreSQL has.
func (p *PostgresDB) Pool() *pgxpool.Pool { return p.pool }

// Dialect implements DB.
func (p *PostgresDB) Dialect() *Dialect { return PostgresDialect }

// Reader implements DB.
func (p *PostgresDB) Reader() Querier { return p.q }

// Writer implements DB.
func (p *PostgresDB) Writer() Querier { return p.q }

// Read implements DB: a read-only REPEATABLE READ transaction.
func (p *PostgresDB) Read(ctx context.Context, fn func(tx Tx) error) error {
	tx, err := p.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer rollback(tx)
	return fn(pgQuerier{tx})
}

// Write implements DB.
func (p *PostgresDB) Write(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	return guarded(ctx, fn, p.write)
}

func (p *PostgresDB) write(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := p.writeOnce(ctx, fn)
		if err == nil || attempt == MaxAttempts || !pgdb.Retryable(err) || ctx.Err() != nil {
			return err
		}
	}
}

func (p *PostgresDB) writeOnce(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(ctx, pgQuerier{tx}); err != nil {
		rollback(tx)
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// rollback ends a transaction that will not commit, even when the
// caller's context has ended.
func rollback(tx pgx.Tx) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = tx.Rollback(ctx)
}

// Close implements DB.
func (p *PostgresDB) Close() error {
	p.pool.Close()
	return nil
}

// pgConn is what *pgxpool.Pool and pgx.Tx have in common.
type pgConn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// pgQuerier is a Querier over pgx.
type pgQuerier struct{ c pgConn }

func (q pgQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.c.Exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (q pgQuerier) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	rows, err := q.c.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (q pgQuerier) QueryRow(ctx context.Context, query string, args ...any) Row {
	return pgRow{q.c.QueryRow(ctx, query, args...)}
}

type pgRow struct{ pgx.Row }

func (r pgRow) Scan(dest ...any) error {
	if err := r.Row.Scan(dest...); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNoRows
		}
		return err
	}
	return nil
}

// PgxTx returns the pgx transaction under tx, a transaction of a PostgresDB,
// for what only PostgreSQL has (COPY, batches); ok is false for any other
// Tx.
func PgxTx(tx Tx) (pgx.Tx, bool) {
	q, ok := tx.(pgQuerier)
	if !ok {
		return nil, false
	}
	t, ok := q.c.(pgx.Tx)
	return t, ok
}
