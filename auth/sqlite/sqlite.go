package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/sqlitedb"
	"github.com/agentmem/agentmem/store"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the key store's schema, component "keys".
var migrations = migrate.MustLoad("keys", migrationFiles, "migrations")

func init() {
	auth.Register(sqlitedb.Scheme, func(ctx context.Context, u *url.URL) (auth.KeyStore, error) {
		path, opts, err := sqlitedb.ParseURL(u)
		if err != nil {
			return nil, err
		}
		return Open(ctx, path, opts)
	})
}

// Store is an auth.KeyStore over a SQLite database. It is safe for
// concurrent use, and by several processes on one machine.
type Store struct {
	db     *sqlitedb.DB
	closed atomic.Bool
}

var _ auth.KeyStore = (*Store)(nil)

// Open opens (creating it if needed) the SQLite database at path, or
// sqlitedb.MemoryPath, and brings the key table up to date.
func Open(ctx context.Context, path string, opts sqlitedb.Options) (*Store, error) {
	db, err := sqlitedb.OpenMigrated(ctx, path, opts, migrations)
	if err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

// Close closes the database; operations after it fail with
// store.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.db.Close()
}

// dbErr turns a database error into the store's: after Close, ErrClosed.
func (s *Store) dbErr(op string, err error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return fmt.Errorf("auth/sqlite: %s: %w", op, sqlitedb.Classify(err))
}

func micros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func fromMicros(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMicro(v.Int64).UTC()
}

// Insert implements auth.KeyStore.
func (s *Store) Insert(ctx context.Context, rec *auth.Record) error {
	if err := auth.ValidateRecord(rec); err != nil {
		return err
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	res, err := s.db.W.ExecContext(ctx, `INSERT INTO api_keys (id, tenant, name, hash, created_at, last_used_at, revoked_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		rec.ID, rec.Tenant, rec.Name, rec.Hash, micros(rec.CreatedAt), micros(rec.LastUsedAt), micros(rec.RevokedAt))
	if err != nil {
		return s.dbErr("insert", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return auth.Conflict(rec.ID)
	}
	return nil
}

const columns = "id, tenant, name, hash, created_at, last_used_at, revoked_at"

func scan(sc interface{ Scan(...any) error }) (*auth.Record, error) {
	var r auth.Record
	var created int64
	var used, revoked sql.NullInt64
	if err := sc.Scan(&r.ID, &r.Tenant, &r.Name, &r.Hash, &created, &used, &revoked); err != nil {
		return nil, err
	}
	r.CreatedAt = time.UnixMicro(created).UTC()
	r.LastUsedAt, r.RevokedAt = fromMicros(used), fromMicros(revoked)
	return &r, nil
}

// Lookup implements auth.KeyStore.
func (s *Store) Lookup(ctx context.Context, id string) (*auth.Record, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	r, err := scan(s.db.R.QueryRowContext(ctx, "SELECT "+columns+" FROM api_keys WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
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
	q := "SELECT " + columns + " FROM api_keys"
	var args []any
	if tenant != "" {
		q += " WHERE tenant = ?"
		args = append(args, tenant)
	}
	rows, err := s.db.R.QueryContext(ctx, q+" ORDER BY created_at, id", args...)
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
	r, err := scan(s.db.W.QueryRowContext(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?)
		WHERE id = ? RETURNING `+columns, micros(auth.Normalize(at)), id))
	if errors.Is(err, sql.ErrNoRows) {
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
	res, err := s.db.W.ExecContext(ctx, `UPDATE api_keys SET last_used_at = max(coalesce(last_used_at, ?1), ?1) WHERE id = ?2`,
		auth.Normalize(at).UnixMicro(), id)
	if err != nil {
		return s.dbErr("touch", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return auth.NotFound(id)
	}
	return nil
}

// Any implements auth.KeyStore.
func (s *Store) Any(ctx context.Context) (bool, error) {
	if s.closed.Load() {
		return false, store.ErrClosed
	}
	var n int
	if err := s.db.R.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM api_keys)").Scan(&n); err != nil {
		return false, s.dbErr("any", err)
	}
	return n == 1, nil
}
