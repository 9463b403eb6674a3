package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/pgdb"
	"github.com/agentmem/agentmem/store"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the key store's schema, component "keys". On Citus
// api_keys is a reference table: a key is looked up before its tenant is
// known, every node holds a copy (the coordinator reads its own), and
// keys change seldom (creation, revocation, LastUsedAt at most once a
// minute per key).
var migrations = migrate.MustLoad("keys", migrationFiles, "migrations").WithCitus(migrate.Citus{
	Reference: []string{"api_keys"},
})

func init() {
	open := func(ctx context.Context, u *url.URL) (auth.KeyStore, error) {
		conn, schema := pgdb.SplitSchema(u)
		return Open(ctx, conn, schema)
	}
	auth.Register("postgres", open)
	auth.Register("postgresql", open)
}

// maxConns caps the key store's pool: a key is looked up once per cache
// period, not once per request.
const maxConns = 4

// Store is an auth.KeyStore over PostgreSQL. It is safe for concurrent
// use by many goroutines and processes.
type Store struct {
	pool   *pgxpool.Pool
	closed atomic.Bool
}

var _ auth.KeyStore = (*Store)(nil)

// Open connects to the database connString names (see pgdb.Open), with
// schema ("" for the default search_path) holding the table, and brings
// the table up to date.
func Open(ctx context.Context, connString, schema string) (*Store, error) {
	pool, err := pgdb.Open(ctx, connString, schema, maxConns)
	if err != nil {
		return nil, err
	}
	if err := migrate.Postgres(ctx, pool, schema, migrations); err != nil {
		pool.Close()
		return nil, err
	}
	return &Store{pool: pool}, nil
}

// Close closes the pool; operations after it fail with store.ErrClosed.
func (s *Store) Close() error {
	if !s.closed.Swap(true) {
		s.pool.Close()
	}
	return nil
}

func (s *Store) dbErr(op string, err error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return fmt.Errorf("auth/postgres: %s: %w", op, pgdb.Classify(err))
}

// ts is a time for a nullable column.
func ts(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := auth.Normalize(t)
	return &u
}

func fromTS(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// Insert implements auth.KeyStore.
func (s *Store) Insert(ctx context.Context, rec *auth.Record) error {
	if err := auth.ValidateRecord(rec); err != nil {
		return err
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO api_keys (id, tenant, name, hash, created_at, last_used_at, revoked_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
		rec.ID, rec.Tenant, rec.Name, rec.Hash, auth.Normalize(rec.CreatedAt), ts(rec.LastUsedAt), ts(rec.RevokedAt))
	if err != nil {
		return s.dbErr("insert", err)
	}
	if tag.RowsAffected() == 0 {
		return auth.Conflict(rec.ID)
	}
	return nil
}

const columns = "id, tenant, name, hash, created_at, last_used_at, revoked_at"

func scan(row pgx.Row) (*auth.Record, error) {
	var r auth.Record
	var used, revoked *time.Time
	if err := row.Scan(&r.ID, &r.Tenant, &r.Name, &r.Hash, &r.CreatedAt, &used, &revoked); err != nil {
		return nil, err
	}
	r.CreatedAt = r.CreatedAt.UTC()
	r.LastUsedAt, r.RevokedAt = fromTS(used), fromTS(revoked)
	return &r, nil
}

// Lookup implements auth.KeyStore.
func (s *Store) Lookup(ctx context.Context, id string) (*auth.Record, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	r, err := scan(s.pool.QueryRow(ctx, "SELECT "+columns+" FROM api_keys WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, auth.NotFound(id)
	}
	if err != nil {
		return nil, s.dbErr("lookup", err)
	}
	return r, nil
}

// List implements auth.KeyStore.
func (s *Store) List(ctx context.Context, tenant string) ([]*auth.Key, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.pool.Query(ctx, "SELECT "+columns+" FROM api_keys WHERE $1 = '' OR tenant = $1 ORDER BY created_at, id", tenant)
	if err != nil {
		return nil, s.dbErr("list", err)
	}
	defer rows.Close()
	out := []*auth.Key{}
	for rows.Next() {
		r, err := scan(rows)
		if err != nil {
			return nil, s.dbErr("list", err)
		}
		out = append(out, &r.Key)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr("list", err)
	}
	return out, nil
}

// Revoke implements auth.KeyStore.
func (s *Store) Revoke(ctx context.Context, id string, at time.Time) (*auth.Key, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	r, err := scan(s.pool.QueryRow(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $1)
		WHERE id = $2 RETURNING `+columns, auth.Normalize(at), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, auth.NotFound(id)
	}
	if err != nil {
		return nil, s.dbErr("revoke", err)
	}
	return &r.Key, nil
}

// Touch implements auth.KeyStore.
func (s *Store) Touch(ctx context.Context, id string, at time.Time) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET last_used_at = greatest(last_used_at, $1) WHERE id = $2`, auth.Normalize(at), id)
	if err != nil {
		return s.dbErr("touch", err)
	}
	if tag.RowsAffected() == 0 {
		return auth.NotFound(id)
	}
	return nil
}

// Any implements auth.KeyStore.
func (s *Store) Any(ctx context.Context) (bool, error) {
	if s.closed.Load() {
		return false, store.ErrClosed
	}
	var has bool
	if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM api_keys)").Scan(&has); err != nil {
		return false, s.dbErr("any", err)
	}
	return has, nil
}
