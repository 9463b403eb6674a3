// Package postgres is a blocks.Store over PostgreSQL, which any number of
// servers can share, and Citus, where the blocks tables are distributed
// by tenant. Importing it registers the "postgres" and "postgresql"
// schemes with blocks.Open.
package postgres

import (
	"context"
	"embed"
	"net/url"

	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/blocks/internal/sqlblocks"
	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/pgdb"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the blocks tables' schema migrations, component
// "blocks" of the agentmem_migrations table. On Citus the tables are
// distributed by tenant, co-located with the session store's.
var migrations = migrate.MustLoad("blocks", migrationFiles, "migrations").WithCitus(migrate.Citus{
	Distributed: []string{"blocks", "blocks_history"},
	Prepare: `ALTER TABLE blocks ALTER COLUMN tenant TYPE text COLLATE "C";
		ALTER TABLE blocks_history ALTER COLUMN tenant TYPE text COLLATE "C";`,
})

// SchemaVersion is the newest schema version this package knows.
func SchemaVersion() int { return migrations.Version() }

func init() {
	open := func(ctx context.Context, u *url.URL) (blocks.Store, error) {
		conn, schema := pgdb.SplitSchema(u)
		return Open(ctx, conn, Options{Schema: schema})
	}
	blocks.Register("postgres", open)
	blocks.Register("postgresql", open)
}

// Options configures a Store. The zero value is a good default.
type Options struct {
	// Schema is the PostgreSQL schema of the blocks tables, created when
	// missing and set as every connection's search_path; empty means the
	// database's default search_path.
	Schema string
	// MaxConns caps the connection pool; zero means pgxpool's default.
	MaxConns int32
}

// Store is a blocks.Store over a PostgreSQL database. It is safe for
// concurrent use.
type Store struct {
	*sqlblocks.Store
}

var _ blocks.Store = (*Store)(nil)

// Open connects to the database connString names and brings the blocks
// tables up to date.
func Open(ctx context.Context, connString string, opts Options) (*Store, error) {
	db, err := pgdb.OpenSQLDB(ctx, connString, opts.Schema, opts.MaxConns, migrations)
	if err != nil {
		return nil, err
	}
	return &Store{sqlblocks.New(db)}, nil
}
