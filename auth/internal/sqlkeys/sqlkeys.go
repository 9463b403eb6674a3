// Package sqlkeys is the auth.KeyStore of the SQL backends, written once
// over internal/sqldb: the queries of the api_keys table, the scanning of
// its rows and the mapping of errors. auth/sqlite and auth/postgres open
// their database, run their own migrations and wrap a Store. Nothing in
// it differs between the databases: the placeholders and the times are
// sqldb's.
package sqlkeys

import (
	"context"
	"errors"
	"time"

	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/store"
)

// Store is an auth.KeyStore over a sqldb.DB whose api_keys table is
// migrated. It is safe for concurrent use.
type Store struct {
	g *sqldb.Guard
	d *sqldb.Dialect
}

var _ auth.KeyStore = (*Store)(nil)

// New returns a Store over db, which it closes on Close. Its errors name
// it "auth/" and the dialect ("auth/sqlite"); after Close they wrap
// store.ErrClosed.
func New(db sqldb.DB) *Store {
	return &Store{g: sqldb.NewGuard(db, "auth/"+db.Dialect().Name, store.ErrClosed), d: db.Dialect()}
}

// Close closes the database; operations after it fail with
// store.ErrClosed.
func (s *Store) Close() error { return s.g.Close() }

// Insert implements auth.KeyStore.
func (s *Store) Insert(ctx context.Context, rec *auth.Record) error {
	if err := auth.ValidateRecord(rec); err != nil {
		return err
	}
	if err := s.g.Closed("insert"); err != nil {
		return err
	}
	n, err := s.g.Writer().Exec(ctx, `INSERT INTO api_keys (id, tenant, name, hash, created_at, last_used_at, revoked_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
		rec.ID, rec.Tenant, rec.Name, rec.Hash, s.d.Time(rec.CreatedAt), s.d.Time(rec.LastUsedAt), s.d.Time(rec.RevokedAt))
	if err != nil {
		return s.g.Err("insert", err)
	}
	if n == 0 {
		return auth.Conflict(rec.ID)
	}
	return nil
}

// columns are the api_keys columns, in the order scan reads them.
const columns = "id, tenant, name, hash, created_at, last_used_at, revoked_at"

func (s *Store) scan(row sqldb.Row) (*auth.Record, error) {
	var r auth.Record
	if err := row.Scan(&r.ID, &r.Tenant, &r.Name, &r.Hash,
		s.d.ScanTime(&r.CreatedAt), s.d.ScanTime(&r.LastUsedAt), s.d.ScanTime(&r.RevokedAt)); err != nil {
		return nil, err
	}
	return &r, nil
}

// Lookup implements auth.KeyStore.
func (s *Store) Lookup(ctx context.Context, id string) (*auth.Record, error) {
	if err := s.g.Closed("lookup"); err != nil {
		return nil, err
	}
	r, err := s.scan(s.g.Reader().QueryRow(ctx, "SELECT "+columns+" FROM api_keys WHERE id = $1", id))
	if errors.Is(err, sqldb.ErrNoRows) {
		return nil, auth.NotFound(id)
	}
	if err != nil {
		return nil, s.g.Err("lookup", err)
	}
	return r, nil
}

// List implements auth.KeyStore.
func (s *Store) List(ctx context.Context, tenant string) ([]*auth.Key, error) {
	if err := s.g.Closed("list"); err != nil {
		return nil, err
	}
	q := "SELECT " + columns + " FROM api_keys"
	var args []any
	if tenant != "" {
		q += " WHERE tenant = $1"
		args = append(args, tenant)
	}
	rows, err := s.g.Reader().Query(ctx, q+" ORDER BY created_at, id", args...)
	if err != nil {
		return nil, s.g.Err("list", err)
	}
	defer rows.Close()
	out := []*auth.Key{}
	for rows.Next() {
		r, err := s.scan(rows)
		if err != nil {
			return nil, s.g.Err("list", err)
		}
		out = append(out, &r.Key)
	}
	if err := rows.Err(); err != nil {
		return nil, s.g.Err("list", err)
	}
	return out, nil
}

// Revoke implements auth.KeyStore.
func (s *Store) Revoke(ctx context.Context, id string, at time.Time) (*auth.Key, error) {
	if err := s.g.Closed("revoke"); err != nil {
		return nil, err
	}
	r, err := s.scan(s.g.Writer().QueryRow(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $1)
		WHERE id = $2 RETURNING `+columns, s.d.Time(at), id))
	if errors.Is(err, sqldb.ErrNoRows) {
		return nil, auth.NotFound(id)
	}
	if err != nil {
		return nil, s.g.Err("revoke", err)
	}
	return &r.Key, nil
}

// Touch implements auth.KeyStore: LastUsedAt only moves forward.
func (s *Store) Touch(ctx context.Context, id string, at time.Time) error {
	if err := s.g.Closed("touch"); err != nil {
		return err
	}
	n, err := s.g.Writer().Exec(ctx, `UPDATE api_keys
		SET last_used_at = CASE WHEN last_used_at IS NULL OR last_used_at < $1 THEN $1 ELSE last_used_at END
		WHERE id = $2`, s.d.Time(at), id)
	if err != nil {
		return s.g.Err("touch", err)
	}
	if n == 0 {
		return auth.NotFound(id)
	}
	return nil
}

// Any implements auth.KeyStore.
func (s *Store) Any(ctx context.Context) (bool, error) {
	if err := s.g.Closed("any"); err != nil {
		return false, err
	}
	var has bool
	if err := s.g.Reader().QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM api_keys)").Scan(&has); err != nil {
		return false, s.g.Err("any", err)
	}
	return has, nil
}
