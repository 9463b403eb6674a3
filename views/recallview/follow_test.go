package recallview_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/views/recallview"
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
	f := recallview.NewFollower(st, st, &recallview.Indexer{Index: ix, Store: st}, recallview.FollowerOptions{
		Settle: time.Hour, Poll: time.Hour, // only a notification or a Sync wakes it
		OnBatch: func(b recallview.BatchInfo) {
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
		f.Notify() // as a sessions service does after every write
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

// upsertCounter is a Backend that counts its Upserts.
type upsertCounter struct {
	recall.Backend
	mu sync.Mutex
	n  int
}

func (c *upsertCounter) Upsert(ctx context.Context, docs ...recall.Doc) error {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.Backend.Upsert(ctx, docs...)
}

// TestFollowerDeletionInBatch: a session deleted in the middle of a
// batch of changes takes the documents collected of it along, without
// splitting the batch: the other sessions' documents, from before and
// after the deletion, are written in one upsert, and a session made
// again under the deleted one's ID is indexed as the new session.
func TestFollowerDeletionInBatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	backend := &upsertCounter{Backend: recall.NewMemory(recall.MemoryOptions{})}
	ix := recall.New(backend, recall.Options{})
	f := recallview.NewFollower(st, st, &recallview.Indexer{Index: ix, Store: st}, recallview.FollowerOptions{Settle: time.Hour, Poll: time.Hour})
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	if err := f.Sync(ctx); err != nil { // the follower has read the (empty) feed
		t.Fatal(err)
	}
	create := func(id string) {
		t.Helper()
		if _, err := st.Create(ctx, store.CreateRequest{ID: id, Tenant: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	task := func(id, text string) {
		t.Helper()
		n++
		step := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: fmt.Sprintf("t%d", n)}, Task: text}
		if _, err := st.Append(ctx, store.AppendRequest{Tenant: "t", SessionID: id, Steps: []agentmem.Step{step}}); err != nil {
			t.Fatal(err)
		}
	}
	create("r")
	create("s")
	task("r", "the first zqr turn")
	task("s", "an old zqold turn")
	task("s", "another old zqold turn")
	if err := st.Delete(ctx, "t", "s"); err != nil {
		t.Fatal(err)
	}
	task("r", "the second zqr turn")
	create("s")
	task("s", "a new zqnew turn")
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	defer scancel()
	if err := f.Sync(sctx); err != nil {
		t.Fatal(err)
	}
	backend.mu.Lock()
	upserts := backend.n
	backend.mu.Unlock()
	if upserts != 1 {
		t.Errorf("%d upserts for the batch, want 1: the deletion split it", upserts)
	}
	docs, err := backend.Get(ctx, "t", "r#1", "r#2", "s#1", "s#2")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, d.ID+": "+d.Text)
	}
	slices.Sort(got)
	if want := "[r#1: the first zqr turn r#2: the second zqr turn s#1: a new zqnew turn]"; fmt.Sprint(got) != want {
		t.Errorf("the index holds %v, want %s", got, want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
