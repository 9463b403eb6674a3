package sqlite

import (
	"context"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/sqlitedb"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/recall/internal/sqlindex"
)

// TestMigrationRebuildsFTSWithoutDetail opens a file at schema version 3,
// whose recall_fts keeps positions, indexes documents into it, and checks
// that migration 0004 makes recall_fts again with detail=none and every
// document's terms: a word and an identifier (counted in recall_fts at
// search time) find the documents that hold them, and a delete after the
// migration removes a document's terms.
func TestMigrationRebuildsFTSWithoutDetail(t *testing.T) {
	ctx := context.Background()
	path := indexedAt(t, 3,
		recall.Doc{Tenant: "t", ID: "a", Text: "the deploy failed with f9a6dabda26c"},
		recall.Doc{Tenant: "t", ID: "b", Text: "the deploy worked"},
		recall.Doc{Tenant: "t", ID: "c", Text: "lunch at noon"},
	)
	b, db2 := openMigrated(t, ctx, path)
	var sql string
	if err := db2.Reader().QueryRow(ctx, `SELECT sql FROM sqlite_master WHERE name = 'recall_fts'`).Scan(&sql); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sql, "detail = none") {
		t.Errorf("recall_fts after the migration: %s, want detail = none", sql)
	}
	find := func(text string) []string { return lexicalIDs(t, b, text, nil) }
	for q, want := range map[string][]string{"deploy": {"a", "b"}, "f9a6dabda26c": {"a"}, "lunch": {"c"}, "absent": nil} {
		if got := find(q); !slices.Equal(got, want) {
			t.Errorf("search %q after the migration = %v, want %v", q, got, want)
		}
	}
	if _, err := b.Delete(ctx, "t", "a"); err != nil {
		t.Fatal(err)
	}
	if got := find("f9a6dabda26c"); got != nil {
		t.Errorf("search for a deleted document's identifier = %v, want none", got)
	}
	if got := find("deploy"); !slices.Equal(got, []string{"b"}) {
		t.Errorf("search %q after a delete = %v, want [b]", "deploy", got)
	}
}

// TestMigrationDropsMeta opens a file at schema version 4, which keeps
// the metadata pairs in a table of their own, indexes documents into it,
// and checks that migration 0005 drops the table and that a filter on
// metadata still finds the documents indexed before, in a search and in a
// clear.
func TestMigrationDropsMeta(t *testing.T) {
	ctx := context.Background()
	path := indexedAt(t, 4,
		recall.Doc{Tenant: "t", ID: "a", Text: "the deploy failed", Metadata: map[string]string{recall.MetaSession: "s1", recall.MetaUser: "ann"}},
		recall.Doc{Tenant: "t", ID: "b", Text: "the deploy worked", Metadata: map[string]string{recall.MetaSession: "s2", recall.MetaUser: "ann"}},
		recall.Doc{Tenant: "t", ID: "c", Text: "the deploy again", Metadata: map[string]string{recall.MetaSession: "s3", recall.MetaUser: "bob", `a "quoted" key`: "x"}},
	)
	b, db2 := openMigrated(t, ctx, path)
	var n int
	if err := db2.Reader().QueryRow(ctx, `SELECT count(*) FROM sqlite_master WHERE name LIKE 'recall_meta%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d tables or indexes named recall_meta* after the migration, want none", n)
	}
	find := func(meta map[string]string) []string { return lexicalIDs(t, b, "deploy", meta) }
	for _, c := range []struct {
		meta map[string]string
		want []string
	}{
		{map[string]string{recall.MetaUser: "ann"}, []string{"a", "b"}},
		{map[string]string{recall.MetaUser: "ann", recall.MetaSession: "s2"}, []string{"b"}},
		{map[string]string{recall.MetaUser: "bob", recall.MetaSession: "s2"}, nil},
		{map[string]string{`a "quoted" key`: "x"}, []string{"c"}},
		{map[string]string{recall.MetaUser: "carl"}, nil},
	} {
		if got := find(c.meta); !slices.Equal(got, c.want) {
			t.Errorf("search with metadata %v = %v, want %v", c.meta, got, c.want)
		}
	}
	if n, err := b.Clear(ctx, "t", recall.Filter{Metadata: map[string]string{recall.MetaUser: "ann"}}); err != nil || n != 2 {
		t.Fatalf("Clear(user ann) = %d, %v; want 2", n, err)
	}
	if got := find(nil); !slices.Equal(got, []string{"c"}) {
		t.Errorf("search after clearing ann's documents = %v, want [c]", got)
	}
}

// indexedAt makes a file at the schema's version n, with docs indexed by
// the current dialect, and returns its path.
func indexedAt(t *testing.T, n int, docs ...recall.Doc) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "recall.db")
	db, err := sqlitedb.OpenSQLDB(ctx, path, Options{}, migrationsUpTo(t, n))
	if err != nil {
		t.Fatal(err)
	}
	before := sqlindex.New(db, sqlindex.Config{Name: "recall/sqlite", Dialect: fts{}})
	if err := before.Upsert(ctx, docs...); err != nil {
		t.Fatal(err)
	}
	if err := before.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// lexicalIDs returns the IDs, sorted, of tenant t's documents a lexical
// search of text finds with the metadata filter meta.
func lexicalIDs(t *testing.T, b *Backend, text string, meta map[string]string) []string {
	t.Helper()
	ms, err := b.Lexical(context.Background(), recall.LexicalQuery{Tenant: "t", Terms: recall.Tokenize(text), Limit: 20, Filter: recall.Filter{Metadata: meta}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	return ids
}

// migrationsUpTo returns the schema's first n migrations, to make a file
// as an older release left it.
func migrationsUpTo(t *testing.T, n int) *migrate.Set {
	t.Helper()
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil || len(names) < n {
		t.Fatalf("migrations: %v, %v; want at least %d", names, err, n)
	}
	old := fstest.MapFS{}
	for _, name := range names[:n] {
		b, err := fs.ReadFile(migrationFiles, name)
		if err != nil {
			t.Fatal(err)
		}
		old["m/"+strings.TrimPrefix(name, "migrations/")] = &fstest.MapFile{Data: b}
	}
	return migrate.MustLoad("recall", old, "m")
}

// openMigrated opens the backend at path, which migrates the file, and
// beside it a database handle to look at the migrated schema. Both close
// when the test ends.
func openMigrated(t *testing.T, ctx context.Context, path string) (*Backend, *sqlitedb.SQLDB) {
	t.Helper()
	b, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	db, err := sqlitedb.OpenSQLDB(ctx, path, Options{}, migrations)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return b, db
}
