package sqlite

import (
	"context"
	"embed"
	"net/url"

	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/facts/internal/sqlfacts"
	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/sqlitedb"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the facts tables' schema migrations, component "facts"
// of the agentmem_migrations table.
var migrations = migrate.MustLoad("facts", migrationFiles, "migrations")

// SchemaVersion is the newest schema version this package knows.
func SchemaVersion() int { return migrations.Version() }

func init() {
	facts.Register(sqlitedb.Scheme, func(ctx context.Context, u *url.URL) (facts.Store, error) {
		path, opts, err := sqlitedb.ParseURL(u)
		if err != nil {
			return nil, err
		}
		return Open(ctx, path, opts)
	})
}

// Options configures a Store, as for every component in a SQLite file:
// BusyTimeout is how long a write waits for another process that holds
// the database's write lock (zero means 5s), ReadConns the number of
// connections that serve reads (zero means 4). The zero value is a good
// default.
type Options = sqlitedb.Options

// Store is a facts.Store in a SQLite database file, which it can share
// with the session store and the recall index (each keeps its own
// tables). It is safe for concurrent use, and by several processes that
// open one file: every Update is a write transaction, which holds the
// database's write lock from its BEGIN IMMEDIATE, so the database's single
// writer serializes the updates of a user (and of every user) across
// processes. Within a process, concurrent Updates commit together (one
// transaction, each Update in a savepoint of its own).
type Store struct {
	*sqlfacts.Store
}

var _ facts.Store = (*Store)(nil)

// Open opens (creating it if needed) the SQLite database at path, or
// sqlitedb.MemoryPath, and brings the facts tables up to date.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	db, err := sqlitedb.OpenSQLDB(ctx, path, opts, migrations)
	if err != nil {
		return nil, err
	}
	return &Store{sqlfacts.New(db)}, nil
}
