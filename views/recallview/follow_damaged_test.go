package recallview_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/sqlite"
	"github.com/agentmem/agentmem/views/recallview"
)

// TestFollowerDamagedSession: a session whose stored metadata does not
// decode does not stall the follower: it indexes the session's turns and
// every other session's, and tells OnDamaged of the session.
func TestFollowerDamagedSession(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(t.TempDir(), "agentmem.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range []string{"bad", "good"} {
		if _, err := st.Create(ctx, store.CreateRequest{ID: id}); err != nil {
			t.Fatal(err)
		}
		step := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "t"}, Task: "the zebra crossing of " + id}
		if _, err := st.Append(ctx, store.AppendRequest{SessionID: id, Steps: []agentmem.Step{step}}); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE sessions SET metadata = '{"m":' WHERE id = 'bad'`); err != nil {
		t.Fatal(err)
	}
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	var mu sync.Mutex
	var damaged []string
	f := recallview.NewFollower(st, st, &recallview.Indexer{Index: ix, Store: st}, recallview.FollowerOptions{
		OnDamaged: func(d *agentmem.DamagedError) {
			mu.Lock()
			damaged = append(damaged, d.ID)
			mu.Unlock()
		},
		OnError: func(err error) { t.Errorf("follower: %v", err) },
	})
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	defer scancel()
	if err := f.Sync(sctx); err != nil {
		t.Fatal(err)
	}
	hits, err := ix.Search(ctx, recall.Query{Text: "zebra crossing", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.Doc.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"bad#1", "good#1"}) {
		t.Errorf("indexed %v, want both sessions' turns", ids)
	}
	mu.Lock()
	if !slices.Contains(damaged, "bad") {
		t.Errorf("OnDamaged was told of %v, want the damaged session", damaged)
	}
	mu.Unlock()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
