package postgres

import (
	"context"
	"embed"

	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/pgdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the store's schema migrations, component "sessions" of
// the agentmem_migrations table.
//
// On Citus, sessions, entries, feed and idempotency_keys are distributed
// by tenant (one co-location group with the other components' tenant
// tables); the feed's consumers' cursors and leases stay plain tables of
// the coordinator.
var migrations = migrate.MustLoad("sessions", migrationFiles, "migrations").WithCitus(migrate.Citus{
	Distributed: []string{"sessions", "entries", "feed", "idempotency_keys"},
})

// ErrSchemaTooNew is returned by Open when the database's schema was
// migrated by a newer version of agentmem than this one: this binary does
// not know the newer tables and must not write to them.
var ErrSchemaTooNew = migrate.ErrSchemaTooNew

// SchemaVersion is the newest schema version this package knows.
func SchemaVersion() int { return migrations.Version() }

// migrateDB brings the schema up to date in one transaction, holding a
// transaction-scoped advisory lock: either every pending migration is
// applied or none is. schema is the store's schema ("" for the default
// search_path), created when missing.
func migrateDB(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	return pgdb.Migrate(ctx, pool, schema, migrations)
}
