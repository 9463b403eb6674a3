package sqlite

import (
	"context"
	"database/sql"
	"embed"

	"github.com/agentmem/agentmem/internal/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the store's schema migrations, component "sessions" of
// the agentmem_migrations table.
var migrations = migrate.MustLoad("sessions", migrationFiles, "migrations")

// ErrSchemaTooNew is returned by Open when the database's schema was
// migrated by a newer version of agentmem than this one: this binary does
// not know the newer tables and must not write to them.
var ErrSchemaTooNew = migrate.ErrSchemaTooNew

// SchemaVersion is the newest schema version this package knows.
func SchemaVersion() int { return migrations.Version() }

// migrateDB brings the schema up to date in one write transaction: either
// every pending migration is applied or none is. The transaction takes the
// database's write lock first (BEGIN IMMEDIATE, see Open), so processes
// that open one file at once migrate one after the other, and the later
// ones find nothing left to do.
func migrateDB(ctx context.Context, db *sql.DB) error {
	return migrate.SQLite(ctx, db, migrations)
}
