package postgres

import (
	"context"
	"embed"
	"net/url"

	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/facts/internal/sqlfacts"
	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/pgdb"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the facts tables' schema migrations, component "facts"
// of the agentmem_migrations table. On Citus the tables are distributed
// by tenant, co-located with the session store's (the audit trail's key
// gains the tenant, which Citus needs in every key).
var migrations = migrate.MustLoad("facts", migrationFiles, "migrations").WithCitus(migrate.Citus{
	Distributed: []string{"facts_users", "facts", "facts_audit"},
	Prepare: `ALTER TABLE facts_users ALTER COLUMN tenant TYPE text COLLATE "C";
		ALTER TABLE facts ALTER COLUMN tenant TYPE text COLLATE "C";
		ALTER TABLE facts_audit ALTER COLUMN tenant TYPE text COLLATE "C";
		ALTER TABLE facts_audit DROP CONSTRAINT facts_audit_pkey;
		ALTER TABLE facts_audit ADD PRIMARY KEY (tenant, seq);`,
})

// SchemaVersion is the newest schema version this package knows.
func SchemaVersion() int { return migrations.Version() }

func init() {
	open := func(ctx context.Context, u *url.URL) (facts.Store, error) {
		conn, schema := pgdb.SplitSchema(u)
		return Open(ctx, conn, Options{Schema: schema})
	}
	facts.Register("postgres", open)
	facts.Register("postgresql", open)
}

// Options configures a Store. The zero value is a good default.
type Options struct {
	// Schema is the PostgreSQL schema of the facts tables, created when
	// missing and set as every connection's search_path; empty means the
	// database's default search_path.
	Schema string
	// MaxConns caps the connection pool; zero means pgxpool's default.
	MaxConns int32
}

// Store is a facts.Store over a PostgreSQL database, which any number of
// servers can share. It is safe for concurrent use.
type Store struct {
	*sqlfacts.Store
}

var _ facts.Store = (*Store)(nil)

// Open connects to the database connString names and brings the facts
// tables up to date.
func Open(ctx context.Context, connString string, opts Options) (*Store, error) {
	db, err := pgdb.OpenSQLDB(ctx, connString, opts.Schema, opts.MaxConns, migrations)
	if err != nil {
		return nil, err
	}
	return &Store{sqlfacts.New(db)}, nil
}
