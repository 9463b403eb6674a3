// Package pgdb opens PostgreSQL connection pools (pgx) the way every
// agentmem component that keeps data in PostgreSQL needs them. A pool has
// an optional schema as every connection's search_path, and its connection
// errors never quote a password.
//
// It is also where PostgreSQL meets internal/sqldb and internal/migrate.
// SQLDB is the sqldb.DB the backends are written against, Dialect its
// dialect, and Migrate the migration runner (with the Citus layout). This
// package and pgx are what a PostgreSQL backend links, and no SQLite
// backend does.
package pgdb

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SchemaParam is the URL query parameter that names the schema, for
// example "postgres://agentmem@db.internal/agentmem?schema=tenant_a". It
// is taken out of the URL (SplitSchema) before the rest goes to pgx, which
// reads the other parameters (sslmode, pool_max_conns, ...).
const SchemaParam = "schema"

// SplitSchema returns u without its schema parameter, as a connection
// string for Open, and the schema it named ("" for none).
func SplitSchema(u *url.URL) (connString, schema string) {
	v := *u
	q := v.Query()
	schema = q.Get(SchemaParam)
	q.Del(SchemaParam)
	v.RawQuery = q.Encode()
	return v.String(), schema
}

// ConfigHook, when set, is called with the configuration of every pool
// Open creates, before it connects. Tests set it to watch what the pools'
// connections are told (internal/citustest). Set it only while no pool is
// being opened.
var ConfigHook func(*pgxpool.Config)

// Open connects a pool to the database connString names: a postgres:// or
// postgresql:// URL, or a key=value connection string, as pgx accepts.
// With a schema, every connection of the pool has it as its search_path,
// so unqualified table names resolve to it. The schema is not created here
// (Migrate creates it). maxConns > 0 caps the pool.
func Open(ctx context.Context, connString, schema string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		// pgx's message may quote the URL, password included: keep it out.
		return nil, fmt.Errorf("postgres: open: cannot parse the connection URL: %w", RedactErr(err))
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	if schema != "" {
		if err := ValidateSchema(schema); err != nil {
			return nil, err
		}
		// Set at connection start-up, so every connection of the pool
		// (and every transaction on it) resolves the unqualified table
		// names to the schema.
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	}
	if ConfigHook != nil {
		ConfigHook(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	return pool, nil
}

// ValidateSchema checks a schema name: 1 to 63 bytes (PostgreSQL's limit
// on identifiers, past which it would silently truncate the name), valid
// UTF-8 with no NUL. A bad name is an *agentmem.InvalidError.
func ValidateSchema(name string) error {
	if name == "" || len(name) > 63 || strings.ContainsRune(name, 0) || !utf8.ValidString(name) {
		return &agentmem.InvalidError{Field: "schema", Reason: fmt.Sprintf("%q is not a usable PostgreSQL schema name (1-63 bytes of UTF-8, no NUL)", name)}
	}
	return nil
}

// RedactErr replaces a connection-string parse error by one that cannot
// quote the string, and so a password in it. pgx redacts passwords only on
// a best-effort basis, and a *url.Error quotes the whole URL.
func RedactErr(err error) error {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return err
	}
	reason := "malformed"
	var ue *url.Error
	switch inner := pe.Unwrap(); {
	case errors.As(inner, &ue):
		reason = ue.Err.Error()
	case inner != nil && !strings.Contains(inner.Error(), pe.ConnString):
		reason = inner.Error()
	}
	return fmt.Errorf("invalid connection string (not shown: it may hold a password): %s", reason)
}

// Retryable reports whether err is PostgreSQL aborting a transaction that
// may succeed when run again: a deadlock or a serialization failure.
func Retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// IsUniqueViolation reports whether err is a unique constraint violation.
func IsUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}
