package sqlite

import (
	"context"
	"testing"

	"github.com/agentmem/agentmem/store"
)

// TestReaderStatementsPrepared: a read outside a transaction (Get) runs
// a statement prepared the first time and reused after, and a closed
// cache prepares nothing.
func TestReaderStatementsPrepared(t *testing.T) {
	st, _ := openTemp(t, nil)
	ctx := context.Background()
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	prepared := func() map[string]bool {
		st.rStmts.mu.Lock()
		defer st.rStmts.mu.Unlock()
		out := map[string]bool{}
		for q := range st.rStmts.m {
			out[q] = true
		}
		return out
	}
	before := prepared()
	if _, err := st.Get(ctx, "", "s"); err != nil {
		t.Fatal(err)
	}
	var added []string
	for q := range prepared() {
		if !before[q] {
			added = append(added, q)
		}
	}
	if len(added) != 1 {
		t.Fatalf("Get prepared %d statements, want 1: %q", len(added), added)
	}
	first := st.rStmts.prepare(ctx, added[0])
	if _, err := st.Get(ctx, "", "s"); err != nil {
		t.Fatal(err)
	}
	if again := st.rStmts.prepare(ctx, added[0]); again != first || first == nil {
		t.Fatal("the second Get did not reuse the prepared statement")
	}
	st.rStmts.close()
	if st.rStmts.prepare(ctx, "SELECT 1") != nil {
		t.Fatal("a closed cache prepared a statement")
	}
	if _, err := st.Get(ctx, "", "s"); err != nil { // it runs unprepared
		t.Fatal(err)
	}
}
