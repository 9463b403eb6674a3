package migrate_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/pgdb"
	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "modernc.org/sqlite"
)

func testSet(t *testing.T, component string, sqls ...string) *migrate.Set {
	t.Helper()
	fsys := fstest.MapFS{}
	for i, s := range sqls {
		fsys[filepath.Join("m", []string{"0001_a.sql", "0002_b.sql", "0003_c.sql"}[i])] = &fstest.MapFile{Data: []byte(s)}
	}
	set, err := migrate.Load(component, fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestLoadRefusesBadNames(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"no number": {"m/init.sql": {Data: []byte("SELECT 1")}},
		"zero":      {"m/0000_init.sql": {Data: []byte("SELECT 1")}},
		"gap":       {"m/0001_a.sql": {Data: []byte("SELECT 1")}, "m/0003_c.sql": {Data: []byte("SELECT 1")}},
		"empty":     {"m/README": {Data: []byte("x")}},
	} {
		if _, err := migrate.Load("x", fsys, "m"); err == nil {
			t.Errorf("%s: Load succeeded", name)
		}
	}
	set, err := migrate.Load("x", fstest.MapFS{"m/0002_b.sql": {Data: []byte("B")}, "m/0001_a.sql": {Data: []byte("A")}}, "m")
	if err != nil || set.Version() != 2 || set.Migrations[0].SQL != "A" || set.Migrations[1].Name != "0002_b" {
		t.Fatalf("Load: %+v, %v", set, err)
	}
}

func openSQLite(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "m.db")+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestSQLiteComponents(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	a1 := testSet(t, "a", "CREATE TABLE a1 (x INTEGER)")
	b := testSet(t, "b", "CREATE TABLE b1 (x INTEGER)", "CREATE TABLE b2 (x INTEGER)")
	for range 2 { // the second round is a no-op
		if err := migrate.SQLite(ctx, db, a1); err != nil {
			t.Fatal(err)
		}
		if err := migrate.SQLite(ctx, db, b); err != nil {
			t.Fatal(err)
		}
	}
	a2 := testSet(t, "a", "CREATE TABLE a1 (x INTEGER)", "CREATE TABLE a2 (x INTEGER)")
	if err := migrate.SQLite(ctx, db, a2); err != nil {
		t.Fatal(err)
	}
	var n int
	db.QueryRow("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('a1', 'a2', 'b1', 'b2')").Scan(&n)
	if n != 4 {
		t.Fatalf("%d of 4 tables", n)
	}
	db.QueryRow("SELECT count(*) FROM " + migrate.Table).Scan(&n)
	if n != 4 {
		t.Fatalf("%d migration rows, want 4", n)
	}
	// The older binary that knows only a1 refuses the newer schema.
	if err := migrate.SQLite(ctx, db, a1); !errors.Is(err, migrate.ErrSchemaTooNew) {
		t.Fatalf("older set: %v, want ErrSchemaTooNew", err)
	}
}

func TestSQLiteFailedMigrationChangesNothing(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	bad := testSet(t, "a", "CREATE TABLE a1 (x INTEGER)", "CREATE TABLE nope (")
	if err := migrate.SQLite(ctx, db, bad); err == nil {
		t.Fatal("a broken migration succeeded")
	}
	var n int
	db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'a1'").Scan(&n)
	if n != 0 {
		t.Fatal("the first migration of a failed run was kept")
	}
}

// TestSQLiteAdoptsLegacyTable: a database of an agentmem that recorded
// the session store's migrations in schema_migrations keeps them, as the
// sessions component.
func TestSQLiteAdoptsLegacyTable(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	if _, err := db.Exec(`CREATE TABLE schema_migrations (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL DEFAULT (unixepoch())) STRICT;
		CREATE TABLE s1 (x INTEGER);
		INSERT INTO schema_migrations (version, name) VALUES (1, '0001_a')`); err != nil {
		t.Fatal(err)
	}
	// Another component first: the legacy rows are adopted all the same.
	if err := migrate.SQLite(ctx, db, testSet(t, "recall", "CREATE TABLE r1 (x INTEGER)")); err != nil {
		t.Fatal(err)
	}
	sessions := testSet(t, "sessions", "CREATE TABLE s1 (x INTEGER)", "CREATE TABLE s2 (x INTEGER)")
	if err := migrate.SQLite(ctx, db, sessions); err != nil {
		t.Fatalf("sessions after adoption: %v (migration 1 must not run again)", err)
	}
	var n int
	db.QueryRow("SELECT count(*) FROM " + migrate.Table + " WHERE component = 'sessions'").Scan(&n)
	if n != 2 {
		t.Fatalf("%d sessions rows, want 2", n)
	}
	db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'schema_migrations'").Scan(&n)
	if n != 0 {
		t.Fatal("schema_migrations is still there")
	}
}

func TestPostgres(t *testing.T) {
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	schema := testenv.FreshSchema(t, url)
	cfg := pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	sp, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()

	a := testSet(t, "a", "CREATE TABLE a1 (x integer)")
	b := testSet(t, "b", "CREATE TABLE b1 (x integer)", "CREATE TABLE b2 (x integer)")
	for range 2 {
		if err := pgdb.Migrate(ctx, sp, schema, a); err != nil {
			t.Fatal(err)
		}
		if err := pgdb.Migrate(ctx, sp, schema, b); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := sp.QueryRow(ctx, "SELECT count(*) FROM "+migrate.Table).Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d migration rows (%v), want 3", n, err)
	}
	older := testSet(t, "b", "CREATE TABLE b1 (x integer)")
	if err := pgdb.Migrate(ctx, sp, schema, older); !errors.Is(err, migrate.ErrSchemaTooNew) {
		t.Fatalf("older set: %v, want ErrSchemaTooNew", err)
	}
	bad := testSet(t, "c", "CREATE TABLE c1 (x integer)", "CREATE TABLE nope (")
	if err := pgdb.Migrate(ctx, sp, schema, bad); err == nil {
		t.Fatal("a broken migration succeeded")
	}
	if err := sp.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename = 'c1'", schema).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the first migration of a failed run was kept (%d, %v)", n, err)
	}
}

// TestCitus: on a Citus coordinator, a component's new tables are laid
// out as its Citus layout says (distributed by tenant, reference), a table
// a later migration adds is distributed too, and a schema that held the
// component's plain tables before is left plain.
func TestCitus(t *testing.T) {
	url := testenv.CitusURL(t)
	ctx := context.Background()
	open := func(schema string) *pgxpool.Pool {
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = schema
		p, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	layout := migrate.Citus{Distributed: []string{"d1", "d2"}, Reference: []string{"r1"},
		Prepare: `ALTER TABLE d1 ALTER COLUMN tenant TYPE text COLLATE "C"`}
	const (
		d1 = `CREATE TABLE d1 (tenant text NOT NULL, id text NOT NULL, PRIMARY KEY (tenant, id));
			CREATE TABLE r1 (id text PRIMARY KEY)`
		d2 = `CREATE TABLE d2 (tenant text COLLATE "C" NOT NULL, id text NOT NULL, PRIMARY KEY (tenant, id))`
	)
	kinds := func(p *pgxpool.Pool) map[string]string {
		rows, err := p.Query(ctx, `SELECT c.relname::text, coalesce(d.partmethod::text || '/' || d.colocationid, 'local')
			FROM pg_class c LEFT JOIN pg_dist_partition d ON d.logicalrelid = c.oid
			WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND c.relname <> $1`, migrate.Table)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		var name, kind string
		if _, err := pgx.ForEachRow(rows, []any{&name, &kind}, func() error { out[name] = kind; return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}

	fresh := testenv.FreshSchema(t, url)
	p := open(fresh)
	if err := pgdb.Migrate(ctx, p, fresh, testSet(t, "x", d1).WithCitus(layout)); err != nil {
		t.Fatal(err)
	}
	if err := pgdb.Migrate(ctx, p, fresh, testSet(t, "x", d1, d2).WithCitus(layout)); err != nil {
		t.Fatal(err)
	}
	// Another component of the schema joins the tenant tables' group.
	other := testSet(t, "y", `CREATE TABLE y1 (tenant text COLLATE "C" NOT NULL, id text NOT NULL, PRIMARY KEY (tenant, id))`)
	if err := pgdb.Migrate(ctx, p, fresh, other.WithCitus(migrate.Citus{Distributed: []string{"y1"}})); err != nil {
		t.Fatal(err)
	}
	k := kinds(p)
	if !strings.HasPrefix(k["r1"], "n/") || !strings.HasPrefix(k["d1"], "h/") || k["d1"] != k["d2"] || k["d1"] != k["y1"] {
		t.Fatalf("new schema: %v; want r1 a reference table (n), d1, d2 and y1 hash-distributed in one co-location group", k)
	}

	old := testenv.FreshSchema(t, url)
	p = open(old)
	if err := pgdb.Migrate(ctx, p, old, testSet(t, "x", d1)); err != nil {
		t.Fatal(err)
	}
	if err := pgdb.Migrate(ctx, p, old, testSet(t, "x", d1, d2).WithCitus(layout)); err != nil {
		t.Fatal(err)
	}
	if k := kinds(p); k["d1"] != "local" || k["d2"] != "local" || k["r1"] != "local" {
		t.Fatalf("a schema of plain tables from before: %v; want every table left local", k)
	}
}
