package postgres

import (
	"context"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/agentmem/internal/pgdb"
	"github.com/agentmem/agentmem/internal/turns"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/internal/sqlstore"
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
	// times, expiry, and the default PruneRequest.Now. Nil means the
	// database's clock (clock_timestamp()), so that every server that
	// shares the database judges expiry alike whatever its own clock says.
	// Prune reads it by a query; elsewhere it is the local clock plus the
	// database's offset from it, measured at Open and every minute after.
	Clock func() time.Time
	// MaxConns caps the connection pool. Zero means pgxpool's default
	// (the larger of 4 and the number of CPUs) unless the URL sets
	// pool_max_conns.
	MaxConns int32
}

// Store is the store.Driver over a PostgreSQL database. It is safe for
// concurrent use by many goroutines and by many processes (servers) that
// open the same database: every write is one transaction, and the
// appenders of a session serialize on the session's row.
//
// Its methods are the session store's (store/internal/sqlstore, shared
// with package sqlite) but Append, which is pipelined (see Append).
type Store struct {
	*sqlstore.Store
	pool   *pgxpool.Pool
	schema string
	clock  func() time.Time
	// queue makes a process's appends to one session take turns before
	// they take a connection. The session's row lock serializes them in
	// any case, but each queued there would hold a pooled connection while
	// it waited, so a few busy sessions could starve the reads and the
	// appends to other sessions. The row lock still
	// serializes the appends of several processes.
	queue turns.Turns[store.Key]
	// dbc is the database's clock, when the store reads it (no
	// Options.Clock).
	dbc *dbClock
}

var (
	_ store.Driver     = (*Store)(nil)
	_ store.Feed       = (*Store)(nil)
	_ store.Leaser     = (*Store)(nil)
	_ store.Importer   = (*Store)(nil)
	_ store.HeadReader = (*Store)(nil)
)

// Open connects to the PostgreSQL database that url names (a postgres://
// or postgresql:// URL, or a key=value connection string, as pgx accepts)
// and brings the store's schema up to date. A database whose schema is
// newer than this package knows is refused with an error wrapping
// ErrSchemaTooNew. The connection pool is the store's until Close.
//
// Close closes the connection pool, waiting for connections in use to be
// returned. Operations on a closed store fail with store.ErrClosed;
// closing it again does nothing.
func Open(ctx context.Context, url string, opts Options) (*store.Store, error) {
	d, err := OpenDriver(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	return store.New(d), nil
}

// OpenDriver opens the store's driver as Open does, for what is its own
// (Open wraps it in the portable store.Store).
func OpenDriver(ctx context.Context, url string, opts Options) (*Store, error) {
	return open(ctx, url, opts, time.Now)
}

// open is Open on a machine whose clock is local.
func open(ctx context.Context, url string, opts Options, local func() time.Time) (*Store, error) {
	pool, err := pgdb.Open(ctx, url, opts.Schema, opts.MaxConns)
	if err != nil {
		return nil, err
	}
	if err := migrateDB(ctx, pool, opts.Schema); err != nil {
		pool.Close()
		return nil, pgdb.Classify(err)
	}
	if opts.Clock != nil {
		return newStore(pool, opts.Schema, opts.Clock, nil), nil
	}
	dbc, err := newDBClock(ctx, pool, local)
	if err != nil {
		pool.Close()
		return nil, pgdb.Classify(err)
	}
	return newStore(pool, opts.Schema, dbc.Now, dbc), nil
}

// newStore returns the store over a pool whose schema is migrated, that
// reads clock; dbc, when clock is the database's, is stopped on Close.
func newStore(pool *pgxpool.Pool, schema string, clock func() time.Time, dbc *dbClock) *Store {
	o := sqlstore.Options{Clock: clock, InsertEntries: copyEntries}
	if dbc != nil {
		o.OnClose = dbc.close
	}
	return &Store{
		Store:  sqlstore.New(pgdb.NewSQLDB(pool), o),
		pool:   pool,
		schema: schema,
		clock:  clock,
		dbc:    dbc,
	}
}

// Prune implements store.Driver. Without PruneRequest.Now and with the
// database's clock, it judges expiry by the database's clock read by a
// query: a deletion cannot be undone, so it does not rest on the offset
// measured last.
func (s *Store) Prune(ctx context.Context, req store.PruneRequest) (*store.PruneResponse, error) {
	if req.Now.IsZero() && s.dbc != nil {
		if err := sqlstore.CheckOpen(s.Store); err != nil {
			return nil, err
		}
		now, err := s.dbc.exact(ctx)
		if err != nil {
			return nil, sqlstore.Err(s.Store, "prune", err)
		}
		req.Now = now
	}
	return s.Store.Prune(ctx, req)
}

// openURL is the store.Opener for postgres:// and postgresql:// URLs. The
// schema query parameter (SchemaParam) sets Options.Schema.
func openURL(ctx context.Context, u *url.URL) (store.Driver, error) {
	conn, schema := pgdb.SplitSchema(u)
	st, err := OpenDriver(ctx, conn, Options{Schema: schema})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Pool returns the store's connection pool, for health checks and
// metrics (Stat). Queries through it bypass the store's invariants.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Schema returns the schema of the store's tables ("" for the default
// search_path).
func (s *Store) Schema() string { return s.schema }
