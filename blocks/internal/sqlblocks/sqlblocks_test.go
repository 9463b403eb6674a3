package sqlblocks

import (
	"context"
	"os"
	"testing"

	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/internal/sqlitedb"
)

// The reads of a context, List and Get, run as statements kept prepared,
// not parsed again at every call.
func TestReadsArePrepared(t *testing.T) {
	ctx := context.Background()
	schema, err := os.ReadFile("../../sqlite/migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlitedb.Open(sqlitedb.MemoryPath, sqlitedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.W.Exec(string(schema)); err != nil {
		t.Fatal(err)
	}
	s := New(sqlitedb.NewSQLDB(db))
	defer s.Close()
	for range 3 {
		if _, err := s.List(ctx, "t", blocks.Session("s")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, blocks.Key{Tenant: "t", Owner: blocks.Session("s"), Label: "persona"}); err == nil {
			t.Fatal("Get of a missing block: no error")
		}
	}
	if n := s.r.Len(); n != 2 {
		t.Errorf("%d statements kept prepared after three Lists and Gets, want 2", n)
	}
}
