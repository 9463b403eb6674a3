package sqlite

import (
	"context"
	"embed"
	"net/url"

	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/auth/internal/sqlkeys"
	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/sqlitedb"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the key store's schema, component "keys".
var migrations = migrate.MustLoad("keys", migrationFiles, "migrations")

func init() {
	auth.Register(sqlitedb.Scheme, func(ctx context.Context, u *url.URL) (auth.KeyStore, error) {
		path, opts, err := sqlitedb.ParseURL(u)
		if err != nil {
			return nil, err
		}
		return Open(ctx, path, opts)
	})
}

// Store is an auth.KeyStore over a SQLite database. It is safe for
// concurrent use, and by several processes on one machine.
type Store struct {
	*sqlkeys.Store
	db *sqlitedb.DB // the database under the store, for its tests
}

var _ auth.KeyStore = (*Store)(nil)

// Open opens (creating it if needed) the SQLite database at path, or
// sqlitedb.MemoryPath, and brings the key table up to date.
func Open(ctx context.Context, path string, opts sqlitedb.Options) (*Store, error) {
	db, err := sqlitedb.OpenSQLDB(ctx, path, opts, migrations)
	if err != nil {
		return nil, err
	}
	return &Store{Store: sqlkeys.New(db), db: db.DB()}, nil
}
