package sqlitedb_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/sqlitedb"
	"github.com/agentmem/agentmem/recall"
	recallsqlite "github.com/agentmem/agentmem/recall/sqlite"
	"github.com/agentmem/agentmem/store"
	storesqlite "github.com/agentmem/agentmem/store/sqlite"
)

// The session store's appends and the recall index's batches, in one
// file, commit in one transaction when they wait together; closing one
// leaves the other working.
func TestStoreAndRecallShareTheCommitter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentmem.db")
	st, err := storesqlite.Open(ctx, path, storesqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ix, err := recallsqlite.Open(ctx, path, recallsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	db, err := sqlitedb.Open(path, sqlitedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sess, err := st.Create(ctx, store.CreateRequest{UserID: "u"})
	if err != nil {
		t.Fatal(err)
	}

	g := db.Group()
	var mu sync.Mutex
	var batches []int
	queued := make(chan int, 100)
	sqlitedb.WatchGroup(g, func(n int) { queued <- n }, func(n int) {
		mu.Lock()
		batches = append(batches, n)
		mu.Unlock()
	})
	holding, release := make(chan struct{}), make(chan struct{})
	held := make(chan error)
	go func() {
		held <- g.Write(ctx, func(context.Context, *sql.Tx) error {
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	<-queued
	var wg sync.WaitGroup
	var appendErr, indexErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, appendErr = st.Append(ctx, store.AppendRequest{SessionID: sess.ID, Steps: []agentmem.Step{
			&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: agentmem.NewID()}, Task: "find the bug"},
		}})
	}()
	go func() {
		defer wg.Done()
		indexErr = ix.WriteBatch(ctx, recall.Batch{
			Upserts:    []recall.Doc{{ID: "d1", Text: "the bug was in the cache"}},
			Checkpoint: &recall.Checkpoint{Name: "c", Value: "1"},
		})
	}()
	for n := 0; n < 2; n = <-queued {
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if appendErr != nil || indexErr != nil {
		t.Fatalf("append: %v; index: %v", appendErr, indexErr)
	}
	mu.Lock()
	got := slices.Clone(batches)
	mu.Unlock()
	if !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("batches %v, want [1 2]: the append and the index's batch in one transaction", got)
	}
	if s, err := st.Get(ctx, "", sess.ID); err != nil || s.LastSeq != 1 {
		t.Fatalf("the session after the append: %+v, %v", s, err)
	}
	if v, ok, err := ix.Checkpoint(ctx, "c"); err != nil || !ok || v != "1" {
		t.Fatalf("the index's checkpoint: %q, %v, %v", v, ok, err)
	}

	// Closing the store leaves the index writing, and the other way round.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: sess.ID, Steps: []agentmem.Step{
		&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: agentmem.NewID()}, Task: "again"},
	}}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("an append after Close: %v", err)
	}
	if err := ix.Upsert(ctx, recall.Doc{ID: "d2", Text: "after the store closed"}); err != nil {
		t.Fatalf("the index after the store closed: %v", err)
	}
	st2, err := storesqlite.Open(ctx, path, storesqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st2.Append(ctx, store.AppendRequest{SessionID: sess.ID, Steps: []agentmem.Step{
		&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: agentmem.NewID()}, Task: "after the index closed"},
	}}); err != nil {
		t.Fatalf("the store after the index closed: %v", err)
	}
}
