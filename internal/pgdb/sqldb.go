package pgdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/sqldb"
)

// Dialect is PostgreSQL's sqldb.Dialect (and Citus's).
var Dialect = &sqldb.Dialect{
	Name:            sqldb.Postgres,
	Classify:        Classify,
	Transient:       Transient,
	Exhausted:       Exhausted,
	UniqueViolation: uniqueViolation,
	TimeDest:        scanTime,
	RawBytesDest:    func(b *[]byte) any { return (*pgtype.DriverBytes)(b) },
}

func uniqueViolation(err error) (string, bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return pgErr.Message, true
	}
	return "", false
}

// MaxAttempts is how many times Write runs a transaction that PostgreSQL
// aborts for a deadlock or a serialization failure.
const MaxAttempts = 3

// SQLDB is a sqldb.DB over a pgx pool.
type SQLDB struct {
	pool *pgxpool.Pool
	q    querier
}

// NewSQLDB returns a sqldb.DB over pool, which it closes on Close.
func NewSQLDB(pool *pgxpool.Pool) *SQLDB {
	return &SQLDB{pool: pool, q: querier{pool}}
}

// OpenSQLDB connects to the database connString names, as Open does.
// schema ("" for the default search_path) is created when missing and set
// on every connection; maxConns caps the pool, zero for pgxpool's default.
// It brings the schema of one component, its migration set, up to date. On
// a Citus coordinator the tables are laid out as the set says. It returns
// a sqldb.DB over the database.
func OpenSQLDB(ctx context.Context, connString, schema string, maxConns int32, set *migrate.Set) (*SQLDB, error) {
	pool, err := Open(ctx, connString, schema, maxConns)
	if err != nil {
		return nil, err
	}
	if err := Migrate(ctx, pool, schema, set); err != nil {
		pool.Close()
		return nil, err
	}
	return NewSQLDB(pool), nil
}

// Pool returns the pool under the SQLDB, for what only PostgreSQL has.
func (p *SQLDB) Pool() *pgxpool.Pool { return p.pool }

// Dialect implements sqldb.DB.
func (p *SQLDB) Dialect() *sqldb.Dialect { return Dialect }

// Reader implements sqldb.DB.
func (p *SQLDB) Reader() sqldb.Querier { return p.q }

// Writer implements sqldb.DB.
func (p *SQLDB) Writer() sqldb.Querier { return p.q }

// Read implements sqldb.DB: a read-only REPEATABLE READ transaction.
func (p *SQLDB) Read(ctx context.Context, fn func(tx sqldb.Tx) error) error {
	tx, err := p.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer rollback(tx)
	return fn(querier{tx})
}

// Write implements sqldb.DB.
func (p *SQLDB) Write(ctx context.Context, fn func(ctx context.Context, tx sqldb.Tx) error) error {
	return sqldb.SafeWrite(ctx, fn, p.write)
}

func (p *SQLDB) write(ctx context.Context, fn func(ctx context.Context, tx sqldb.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := p.writeOnce(ctx, fn)
		if err == nil || attempt == MaxAttempts || !Retryable(err) || ctx.Err() != nil {
			return err
		}
	}
}

func (p *SQLDB) writeOnce(ctx context.Context, fn func(ctx context.Context, tx sqldb.Tx) error) error {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return err
	}
	if sqldb.IsRedoable(ctx) {
		if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit TO off"); err != nil {
			rollback(tx)
			return err
		}
	}
	if err := fn(ctx, querier{tx}); err != nil {
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

// Close implements sqldb.DB.
func (p *SQLDB) Close() error {
	p.pool.Close()
	return nil
}

// Conn is what *pgxpool.Pool, *pgxpool.Conn, *pgx.Conn and pgx.Tx have in
// common.
type Conn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// NewQuerier returns a sqldb.Querier over c, as the Queriers of a SQLDB
// are. It is for a component that runs statements on a connection it
// holds, such as a transaction begun in a pipeline of its own.
func NewQuerier(c Conn) sqldb.Querier { return querier{c} }

// querier is a sqldb.Querier over pgx, and a sqldb.Batcher.
type querier struct{ c Conn }

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.c.Exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqldb.Rows, error) {
	rows, err := q.c.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqldb.Row {
	return row{q.c.QueryRow(ctx, query, args...)}
}

// ExecBatch implements sqldb.Batcher: the statements go in one pgx batch.
func (q querier) ExecBatch(ctx context.Context, stmts []sqldb.Stmt) error {
	var b pgx.Batch
	for _, st := range stmts {
		b.Queue(st.SQL, st.Args...)
	}
	return q.c.SendBatch(ctx, &b).Close()
}

type row struct{ pgx.Row }

func (r row) Scan(dest ...any) error {
	if err := r.Row.Scan(dest...); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return sqldb.ErrNoRows
		}
		return err
	}
	return nil
}

// PgxTx returns the pgx transaction under tx, a transaction of a SQLDB,
// for what only PostgreSQL has (COPY, batches). ok is false for any other
// Tx.
func PgxTx(tx sqldb.Tx) (pgx.Tx, bool) {
	q, ok := tx.(querier)
	if !ok {
		return nil, false
	}
	t, ok := q.c.(pgx.Tx)
	return t, ok
}
