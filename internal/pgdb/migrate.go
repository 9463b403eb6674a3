package pgdb

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/agentmem/internal/migrate"
)

// lockKey is the advisory lock that serializes migrations of one schema.
// Several servers that start at once migrate one after the other, and the
// later ones find nothing left to do. Every component of a schema shares
// it, since they share the migrations table.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("agentmem migrations\x00" + schema))
	return int64(h.Sum64())
}

// Migrate brings the schema of a component, its migration set, up to date
// in one transaction, holding a transaction-scoped advisory lock. It is
// the PostgreSQL runner of internal/migrate; see there for the rules, and
// for the Citus layout it applies on a Citus coordinator. schema is the
// schema the tables live in ("" for the connection's search_path), created
// when missing. The pool's connections must have it first in their
// search_path (Open sets it).
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string, set *migrate.Set) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", set.Component, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit

	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey(schema)); err != nil {
		return fmt.Errorf("migrate %s: lock: %w", set.Component, err)
	}
	if schema != "" {
		// Under the lock, so that concurrent openers do not race to create it.
		// Only when missing, since CREATE SCHEMA IF NOT EXISTS needs the
		// CREATE privilege on the database even when the schema exists. A user
		// given a schema may not have it.
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil {
			return fmt.Errorf("migrate %s: %w", set.Component, err)
		}
		if !exists {
			if _, err := tx.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
				return fmt.Errorf("migrate %s: create schema %q: %w", set.Component, schema, err)
			}
		}
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+migrate.Table+` (
		component  text        NOT NULL,
		version    integer     NOT NULL,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (component, version)
	)`); err != nil {
		return fmt.Errorf("migrate %s: %w", set.Component, err)
	}
	var legacy bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass('schema_migrations') IS NOT NULL").Scan(&legacy); err != nil {
		return fmt.Errorf("migrate %s: %w", set.Component, err)
	}
	if legacy {
		if _, err := tx.Exec(ctx, `INSERT INTO `+migrate.Table+` (component, version, name, applied_at)
			SELECT $1, version, name, applied_at FROM schema_migrations ON CONFLICT DO NOTHING`, migrate.LegacyComponent); err != nil {
			return fmt.Errorf("migrate %s: adopting schema_migrations: %w", set.Component, err)
		}
		if _, err := tx.Exec(ctx, "DROP TABLE schema_migrations"); err != nil {
			return fmt.Errorf("migrate %s: adopting schema_migrations: %w", set.Component, err)
		}
	}
	var current int
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+migrate.Table+" WHERE component = $1", set.Component).Scan(&current); err != nil {
		return fmt.Errorf("migrate %s: %w", set.Component, err)
	}
	where := "schema (default)"
	if schema != "" {
		where = fmt.Sprintf("schema %q", schema)
	}
	if err := set.CheckVersion(current, where); err != nil {
		return err
	}
	for _, m := range set.Migrations[current:] {
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("migrate %s: %s: %w", set.Component, m.Name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+migrate.Table+" (component, version, name) VALUES ($1, $2, $3)", set.Component, m.Version, m.Name); err != nil {
			return fmt.Errorf("migrate %s: %s: %w", set.Component, m.Name, err)
		}
	}
	if err := distribute(ctx, tx, set, current == 0); err != nil {
		return fmt.Errorf("migrate %s: citus: %w", set.Component, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate %s: commit: %w", set.Component, err)
	}
	return nil
}

// IsCitus reports whether the database q is connected to has the citus
// extension: a Citus coordinator.
func IsCitus(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')").Scan(&ok)
	return ok, err
}

// distribute lays the set's tables out on Citus (see internal/migrate),
// in the migration's transaction; fresh says the component's migrations
// started from nothing in it. On PostgreSQL without Citus, or for a set
// without a layout, it does nothing.
func distribute(ctx context.Context, tx pgx.Tx, set *migrate.Set, fresh bool) error {
	if set.Citus == nil {
		return nil
	}
	citus, err := IsCitus(ctx, tx)
	if err != nil || !citus {
		return err
	}
	marker := set.Component + ".citus"
	var laidOut bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+migrate.Table+" WHERE component = $1)", marker).Scan(&laidOut); err != nil {
		return err
	}
	if !laidOut {
		if !fresh {
			return nil // plain tables from before: left as they are
		}
		if set.Citus.Prepare != "" {
			if _, err := tx.Exec(ctx, set.Citus.Prepare); err != nil {
				return fmt.Errorf("prepare: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+migrate.Table+" (component, version, name) VALUES ($1, 1, 'distributed')", marker); err != nil {
			return err
		}
	}
	// done: laid out already, or not created yet (by a migration this
	// binary does not have, or a later one of the set's).
	done := func(table string) (bool, error) {
		var ok bool
		err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NULL
			OR EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = to_regclass($1))`, table).Scan(&ok)
		return ok, err
	}
	for _, t := range set.Citus.Reference {
		if ok, err := done(t); err != nil || ok {
			if err != nil {
				return err
			}
			continue
		}
		if _, err := tx.Exec(ctx, "SELECT create_reference_table($1)", t); err != nil {
			return fmt.Errorf("create_reference_table(%s): %w", t, err)
		}
	}
	// Co-located with the tenant tables the schema has (every component's),
	// else in a new co-location group. Not Citus's default group: a
	// concurrent DROP of other tables in it can delete it under this
	// transaction.
	var peer *string
	if err := tx.QueryRow(ctx, `SELECT p.logicalrelid::regclass::text FROM pg_dist_partition p
		JOIN pg_class c ON c.oid = p.logicalrelid
		WHERE c.relnamespace = current_schema()::regnamespace AND p.partmethod = 'h'
		ORDER BY p.logicalrelid LIMIT 1`).Scan(&peer); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	for _, t := range set.Citus.Distributed {
		if ok, err := done(t); err != nil || ok {
			if err != nil {
				return err
			}
			continue
		}
		with := "none"
		if peer != nil {
			with = *peer
		}
		if _, err := tx.Exec(ctx, "SELECT create_distributed_table($1, 'tenant', colocate_with => $2)", t, with); err != nil {
			return fmt.Errorf("create_distributed_table(%s): %w", t, err)
		}
		peer = &t
	}
	return nil
}
