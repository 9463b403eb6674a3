package postgres

import (
	"context"
	"embed"
	"net/url"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/auth/internal/sqlkeys"
	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/pgdb"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the key store's schema, component "keys". On Citus
// api_keys is a reference table: a key is looked up before its tenant is
// known, every node holds a copy (the coordinator reads its own), and
// keys change seldom (creation, revocation, LastUsedAt at most once a
// minute per key).
var migrations = migrate.MustLoad("keys", migrationFiles, "migrations").WithCitus(migrate.Citus{
	Reference: []string{"api_keys"},
})

func init() {
	open := func(ctx context.Context, u *url.URL) (auth.KeyStore, error) {
		conn, schema := pgdb.SplitSchema(u)
		return Open(ctx, conn, schema)
	}
	auth.Register("postgres", open)
	auth.Register("postgresql", open)
}

// maxConns caps the key store's pool: a key is looked up once per cache
// period, not once per request.
const maxConns = 4

// Store is an auth.KeyStore over PostgreSQL. It is safe for concurrent
// use by many goroutines and processes.
type Store struct {
	*sqlkeys.Store
	pool *pgxpool.Pool // the pool under the store, for its tests
}

var _ auth.KeyStore = (*Store)(nil)

// Open connects to the database connString names (see pgdb.Open), with
// schema ("" for the default search_path) holding the table, and brings
// the table up to date.
func Open(ctx context.Context, connString, schema string) (*Store, error) {
	db, err := pgdb.OpenSQLDB(ctx, connString, schema, maxConns, migrations)
	if err != nil {
		return nil, err
	}
	return &Store{Store: sqlkeys.New(db), pool: db.Pool()}, nil
}
