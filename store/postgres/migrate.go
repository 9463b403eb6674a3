package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// ErrSchemaTooNew is returned by Open when the database's schema was
// migrated by a newer version of agentmem than this one: this binary does
// not know the newer tables and must not write to them.
var ErrSchemaTooNew = errors.New("postgres: database schema is newer than this agentmem")

// migration is one embedded migration file, NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. Versions
// start at 1 and have no gaps, so the newest known version is the count.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".sql")
		num, _, _ := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("postgres: migration %s: name must start with a positive version number", n)
		}
		body, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("postgres: migration %s: want version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the newest schema version this package knows.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// migrationLockKey is the advisory lock that serializes migrations of one
// schema: several servers that start at once migrate one after the other,
// and the later ones find nothing left to do.
func migrationLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("agentmem/store/postgres migrations\x00" + schema))
	return int64(h.Sum64())
}

// migrate brings the schema up to date in one transaction, holding a
// transaction-scoped advisory lock: either every pending migration is
// applied or none is. schema is the store's schema ("" for the default
// search_path), created when missing.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit

	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLockKey(schema)); err != nil {
		return fmt.Errorf("postgres: migrate: lock: %w", err)
	}
	if schema != "" {
		// Under the lock, so that concurrent openers do not race to
		// create it. Only when missing: CREATE SCHEMA IF NOT EXISTS
		// needs the CREATE privilege on the database even when the
		// schema exists, which a user given a schema may not have.
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil {
			return fmt.Errorf("postgres: migrate: %w", err)
		}
		if !exists {
			if _, err := tx.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
				return fmt.Errorf("postgres: migrate: create schema %q: %w", schema, err)
			}
		}
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer     PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	var current int
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&current); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	if current > len(ms) {
		return fmt.Errorf("%w: schema %q is at version %d, this binary knows versions up to %d; upgrade agentmem",
			ErrSchemaTooNew, schemaName(schema), current, len(ms))
	}
	for _, m := range ms[current:] {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("postgres: migration %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
			return fmt.Errorf("postgres: migration %s: %w", m.name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: migrate: commit: %w", err)
	}
	return nil
}

func schemaName(schema string) string {
	if schema == "" {
		return "(default)"
	}
	return schema
}
