package sqldb_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/pgdb"
	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/internal/sqlitedb"
	"github.com/agentmem/agentmem/internal/testenv"
)

// testSet is a component's migrations: a table, then a column added.
func testSet(t *testing.T, first string) *migrate.Set {
	set, err := migrate.Load("sqldbtest", fstest.MapFS{
		"m/0001_init.sql": {Data: []byte(first)},
		"m/0002_more.sql": {Data: []byte(`ALTER TABLE kv ADD COLUMN n INTEGER NOT NULL DEFAULT 7`)},
	}, "m")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestOpenMigrated opens a database with a component's migrations twice
// on each database: the first applies them, the second finds them done
// and the data kept; a failing migration is an error of Open.
func TestOpenMigrated(t *testing.T) {
	ctx := context.Background()
	// Each returns an opener of one database, new for the test.
	places := map[string]func(t *testing.T) func(set *migrate.Set) (sqldb.DB, error){
		"sqlite": func(t *testing.T) func(set *migrate.Set) (sqldb.DB, error) {
			path := filepath.Join(t.TempDir(), "m.db")
			return func(set *migrate.Set) (sqldb.DB, error) {
				return sqlitedb.OpenSQLDB(ctx, path, sqlitedb.Options{}, set)
			}
		},
		"postgres": func(t *testing.T) func(set *migrate.Set) (sqldb.DB, error) {
			url := testenv.PostgresURL(t)
			schema := testenv.FreshSchema(t, url)
			return func(set *migrate.Set) (sqldb.DB, error) {
				return pgdb.OpenSQLDB(ctx, url, schema, 2, set)
			}
		},
	}
	for name, place := range places {
		t.Run(name, func(t *testing.T) {
			open := place(t)
			set := testSet(t, `CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL)`)
			db, err := open(set)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Writer().Exec(ctx, `INSERT INTO kv (k, v) VALUES ($1, $2)`, "a", "b"); err != nil {
				t.Fatal(err)
			}
			db.Close()
			db, err = open(set)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var v string
			var n, versions int64
			if err := db.Reader().QueryRow(ctx, `SELECT v, n FROM kv WHERE k = $1`, "a").Scan(&v, &n); err != nil || v != "b" || n != 7 {
				t.Fatalf("after reopening: %q %d %v", v, n, err)
			}
			if err := db.Reader().QueryRow(ctx, `SELECT count(*) FROM `+migrate.Table+` WHERE component = 'sqldbtest'`).Scan(&versions); err != nil || versions != 2 {
				t.Fatalf("migrations recorded: %d %v; want 2", versions, err)
			}
			bad, err := migrate.Load("sqldbbad", fstest.MapFS{"m/0001_bad.sql": {Data: []byte(`CREATE TABLE kv (`)}}, "m")
			if err != nil {
				t.Fatal(err)
			}
			if db, err := open(bad); err == nil {
				db.Close()
				t.Fatal("a failing migration opened")
			}
		})
	}
}

// TestGuard checks a Guard's errors before and after Close, and that it
// closes its DB once.
func TestGuard(t *testing.T) {
	ctx := context.Background()
	closedErr := errors.New("thing is closed")
	g := sqldb.NewGuard(openSQLite(t), "thing/sqlite", closedErr)
	if err := g.Closed("get"); err != nil {
		t.Fatalf("Closed before Close: %v", err)
	}
	plain := errors.New("corrupt row")
	if err := g.Err("get", plain); !errors.Is(err, plain) || errors.Is(err, agentmem.ErrUnavailable) || err.Error() != "thing/sqlite: get: corrupt row" {
		t.Fatalf("Err = %v", err)
	}
	dctx, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	_, err := g.Reader().Exec(dctx, `SELECT 1`)
	if err := g.Err("get", err); !errors.Is(err, agentmem.ErrUnavailable) || !strings.HasPrefix(err.Error(), "thing/sqlite: get: ") {
		t.Fatalf("Err of a passed deadline = %v; want transient", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Reader().Exec(ctx, `SELECT 1`); err == nil {
		t.Fatal("the DB is still open after Close")
	}
	for _, err := range []error{g.Closed("put"), g.Err("put", plain)} {
		if !errors.Is(err, closedErr) || errors.Is(err, plain) || err.Error() != "thing/sqlite: put: thing is closed" {
			t.Fatalf("after Close: %v", err)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
