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
	old := fstest.MapFS{}
	for _, name := range []string{"0001_init.sql", "0002_identifier_df.sql", "0003_checkpoints.sql"} {
		b, err := fs.ReadFile(migrationFiles, "migrations/"+name)
		if err != nil {
			t.Fatal(err)
		}
		old["m/"+name] = &fstest.MapFile{Data: b}
	}
	v3 := migrate.MustLoad("recall", old, "m")
	path := filepath.Join(t.TempDir(), "recall.db")
	db, err := sqlitedb.OpenSQLDB(ctx, path, Options{}, v3)
	if err != nil {
		t.Fatal(err)
	}
	before := sqlindex.New(db, sqlindex.Config{Name: "recall/sqlite", Dialect: fts{}})
	docs := []recall.Doc{
		{Tenant: "t", ID: "a", Text: "the deploy failed with f9a6dabda26c"},
		{Tenant: "t", ID: "b", Text: "the deploy worked"},
		{Tenant: "t", ID: "c", Text: "lunch at noon"},
	}
	if err := before.Upsert(ctx, docs...); err != nil {
		t.Fatal(err)
	}
	if err := before.Close(); err != nil {
		t.Fatal(err)
	}

	b, db2 := openMigrated(t, ctx, path)
	var sql string
	if err := db2.Reader().QueryRow(ctx, `SELECT sql FROM sqlite_master WHERE name = 'recall_fts'`).Scan(&sql); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sql, "detail = none") {
		t.Errorf("recall_fts after the migration: %s, want detail = none", sql)
	}
	find := func(text string) []string {
		t.Helper()
		ms, err := b.Lexical(ctx, recall.LexicalQuery{Tenant: "t", Terms: recall.Tokenize(text), Limit: 10})
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
