package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/pgdb"
	"github.com/agentmem/agentmem/store"
)

func init() {
	store.Register("postgres", openURL)
	store.Register("postgresql", openURL)
}

// SchemaParam is the URL query parameter that sets Options.Schema when the
// store is opened by URL (store.Open), for example
// "postgres://agentmem@db.internal/agentmem?schema=tenant_a". It is taken
// out of the URL before the rest goes to pgx, which reads the other
// parameters (sslmode, pool_max_conns, ...).
const SchemaParam = pgdb.SchemaParam

// Options configures a Store. The zero value is a good default.
type Options struct {
	// Schema is the PostgreSQL schema that holds the store's tables. It is
	// created when missing, and every connection of the store has it as
	// its search_path, so several stores (tests, tenants) can share one
	// database without seeing each other. Empty means the database's
	// default search_path (usually "public"), left as it is.
	Schema string
	// Clock is the only source of time the store reads: session and entry
	// times, expiry, and the default PruneRequest.Now. Nil means time.Now.
	Clock func() time.Time
	// MaxConns caps the connection pool. Zero means pgxpool's default
	// (the larger of 4 and the number of CPUs) unless the URL sets
	// pool_max_conns.
	MaxConns int32
}

// Store is a store.Store over a PostgreSQL database. It is safe for
// concurrent use by many goroutines and by many processes (servers) that
// open the same database: every write is one transaction, and the
// appenders of a session serialize on the session's row.
type Store struct {
	pool   *pgxpool.Pool
	clock  func() time.Time
	schema string
	// closed is set by Close; operations then fail with store.ErrClosed.
	closed atomic.Bool
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Importer = (*Store)(nil)
)

// Open connects to the PostgreSQL database that url names (a postgres://
// or postgresql:// URL, or a key=value connection string, as pgx accepts)
// and brings the store's schema up to date. A database whose schema is
// newer than this package knows is refused with an error wrapping
// ErrSchemaTooNew. The connection pool is the store's until Close.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	pool, err := pgdb.Open(ctx, url, opts.Schema, opts.MaxConns)
	if err != nil {
		return nil, err
	}
	if err := migrateDB(ctx, pool, opts.Schema); err != nil {
		pool.Close()
		return nil, pgdb.Classify(err)
	}
	return &Store{pool: pool, clock: opts.Clock, schema: opts.Schema}, nil
}

// openURL is the store.Opener for postgres:// and postgresql:// URLs. The
// schema query parameter (SchemaParam) sets Options.Schema.
func openURL(ctx context.Context, u *url.URL) (store.Store, error) {
	conn, schema := pgdb.SplitSchema(u)
	st, err := Open(ctx, conn, Options{Schema: schema})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Close closes the connection pool, waiting for connections in use to be
// returned. Operations on a closed store fail with store.ErrClosed;
// closing it again does nothing.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.pool.Close()
	return nil
}

// Pool returns the store's connection pool, for health checks and
// metrics (Stat). Queries through it bypass the store's invariants.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Schema returns the schema of the store's tables ("" for the default
// search_path).
func (s *Store) Schema() string { return s.schema }

// checkOpen returns store.ErrClosed after Close.
func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

// now reads the store's clock at the precision the store keeps (see
// store.Now): PostgreSQL's timestamptz holds microseconds.
func (s *Store) now() time.Time { return store.Now(s.clock) }

// isStoreErr reports whether err is one of the contract's errors, which
// pass through unchanged.
func isStoreErr(err error) bool {
	return errors.Is(err, agentmem.ErrNotFound) || errors.Is(err, agentmem.ErrConflict) ||
		errors.Is(err, agentmem.ErrInvalid) || errors.Is(err, store.ErrClosed)
}

// dbErr turns an error from the database into the store's error. A unique
// violation (two writers raced past the session lock, which the schema
// makes impossible, or two creators of one session ID) is ErrConflict; an
// operation that lost a race with Close reports store.ErrClosed; a
// transient failure (a lost connection, a server that is down or shutting
// down, a deadlock or serialization failure that outlived the retries, a
// timeout) wraps agentmem.ErrUnavailable (pgdb.Classify); anything else is
// a failure nobody expected. Either way the error is returned wrapped, so
// that errors.As finds the *pgconn.PgError or network error, and it is
// never disguised as ErrNotFound.
func (s *Store) dbErr(op string, err error) error {
	if err == nil || isStoreErr(err) {
		return err
	}
	if s.closed.Load() {
		return fmt.Errorf("postgres: %s: %w (%v)", op, store.ErrClosed, err)
	}
	if pgdb.IsUniqueViolation(err) {
		var pgErr *pgconn.PgError
		errors.As(err, &pgErr)
		return fmt.Errorf("postgres: %s: %w: %s", op, agentmem.ErrConflict, pgErr.Message)
	}
	return fmt.Errorf("postgres: %s: %w", op, pgdb.Classify(err))
}

// notFound is the error for a missing (or expired) session.
func notFound(id string) error {
	return fmt.Errorf("postgres: session %q: %w", id, agentmem.ErrNotFound)
}

// write runs fn in a read-committed transaction and commits it if fn
// returns nil. Errors are mapped by dbErr. A transaction that PostgreSQL
// aborted as a deadlock victim (two Deletes up one chain of branches, for
// example) changed nothing, so it runs again, up to maxAttempts times.
func (s *Store) write(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := s.writeOnce(ctx, fn)
		if err == nil {
			return nil
		}
		if attempt < maxAttempts && pgdb.Retryable(err) && ctx.Err() == nil {
			continue
		}
		return s.dbErr(op, err)
	}
}

// maxAttempts bounds the runs of a write transaction (see write).
const maxAttempts = 3

func (s *Store) writeOnce(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		rollback(tx)
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// read runs fn in a read-only repeatable-read transaction: one consistent
// snapshot of the database, whatever commits meanwhile.
func (s *Store) read(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return s.dbErr(op, err)
	}
	defer rollback(tx)
	if err := fn(tx); err != nil {
		return s.dbErr(op, err)
	}
	return nil
}

// rollback ends a transaction that will not commit. Its error is of no
// interest: the transaction's own error is what the caller reports, and a
// connection whose rollback fails is closed by pgx.
func rollback(tx pgx.Tx) {
	// A cancelled context must not stop the rollback.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = tx.Rollback(ctx)
}
