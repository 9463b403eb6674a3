// Package sqlite is a blocks.Store in a SQLite database file, which it can
// share with the session store, the recall index and the facts (each
// keeps its own tables). Importing it registers the "sqlite" scheme with
// blocks.Open.
package sqlite

import (
	"context"
	"embed"
	"net/url"

	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/blocks/internal/sqlblocks"
	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/sqlitedb"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the blocks tables' schema migrations, component
// "blocks" of the agentmem_migrations table.
var migrations = migrate.MustLoad("blocks", migrationFiles, "migrations")

// SchemaVersion is the newest schema version this package knows.
func SchemaVersion() int { return migrations.Version() }

func init() {
	blocks.Register(sqlitedb.Scheme, func(ctx context.Context, u *url.URL) (blocks.Store, error) {
		path, opts, err := sqlitedb.ParseURL(u)
		if err != nil {
			return nil, err
		}
		return Open(ctx, path, opts)
	})
}

// Options configures a Store, as for every component in a SQLite file
// (sqlitedb.Options). The zero value is a good default.
type Options = sqlitedb.Options

// Store is a blocks.Store in a SQLite database file. It is safe for
// concurrent use, and by several processes that open one file: every
// write is a transaction that holds the database's write lock, so the
// compare-and-set of a block is atomic across processes.
type Store struct {
	*sqlblocks.Store
}

var _ blocks.Store = (*Store)(nil)

// Open opens (creating it if needed) the SQLite database at path, or
// sqlitedb.MemoryPath, and brings the blocks tables up to date.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	db, err := sqlitedb.OpenSQLDB(ctx, path, opts, migrations)
	if err != nil {
		return nil, err
	}
	return &Store{sqlblocks.New(db)}, nil
}
