package recall_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

// TestFollowerSettles: after a notification the follower lets the writes
// that follow gather (FollowerOptions.Settle) and indexes them in one
// batch; a Sync does not wait for the settling.
func TestFollowerSettles(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	var mu sync.Mutex
	var batches []int
	f := recall.NewFollower(st, st, &recall.Indexer{Index: ix, Store: st}, recall.FollowerOptions{
		Settle: time.Hour, Poll: time.Hour, // only a notification or a Sync wakes it
		OnBatch: func(b recall.BatchInfo) {
			mu.Lock()
			batches = append(batches, b.Changes)
			mu.Unlock()
		},
	})
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s", Tenant: "t"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(ctx); err != nil { // the follower has read the (empty) feed
		t.Fatal(err)
	}
	for i := range 20 {
		step := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: fmt.Sprintf("t%d", i)}, Task: fmt.Sprintf("remember the word zq%d", i)}
		if _, err := st.Append(ctx, store.AppendRequest{Tenant: "t", SessionID: "s", Steps: []agentmem.Step{step}}); err != nil {
			t.Fatal(err)
		}
		f.Notify() // as IndexedStore does after every append
	}
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	defer scancel()
	if err := f.Sync(sctx); err != nil { // not an hour: Sync skips the settling
		t.Fatal(err)
	}
	mu.Lock()
	got := fmt.Sprint(batches)
	mu.Unlock()
	if got != "[20]" {
		t.Errorf("batches of %s changes, want one of all 20", got)
	}
	hits, err := ix.Search(ctx, recall.Query{Tenant: "t", Text: "zq7", K: 5})
	if err != nil || len(hits) == 0 || hits[0].Doc.ID != "s#8" {
		t.Errorf("search after the batch: %v, %v; want s#8 first", hits, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
