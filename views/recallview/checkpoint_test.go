package recallview_test

import (
	"context"
	"encoding/json"
	"errors"
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

// batchCounter is an in-memory backend that counts the batches it
// commits and the documents they write, and fails the next batches while
// fail is above zero (writing nothing of them, as a transaction that
// fails to commit).
type batchCounter struct {
	*recall.Memory
	mu      sync.Mutex
	batches int
	docs    int
	fail    int
}

var errInjected = errors.New("injected commit failure")

func (c *batchCounter) WriteBatch(ctx context.Context, b recall.Batch) error {
	c.mu.Lock()
	if c.fail > 0 {
		c.fail--
		c.mu.Unlock()
		return errInjected
	}
	c.mu.Unlock()
	if err := c.Memory.WriteBatch(ctx, b); err != nil {
		return err
	}
	c.mu.Lock()
	c.batches++
	c.docs += len(b.Upserts)
	c.mu.Unlock()
	return nil
}

func (c *batchCounter) counts() (batches, docs int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.batches, c.docs
}

// lostCursors is a store whose feed never saves a cursor: as if the
// process always crashed before it did.
type lostCursors struct {
	*store.Store
	saves int
}

func (l *lostCursors) SaveCursor(context.Context, string, store.FeedCursor) error {
	l.saves++
	return nil
}

// runFollower runs a follower until stop is called or the test ends.
func runFollower(t *testing.T, f *recallview.Follower) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func syncFollower(t *testing.T, f *recallview.Follower) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

func appendTask(t *testing.T, st *store.Store, id string, n int, text string) {
	t.Helper()
	step := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: fmt.Sprintf("%s-%d", id, n)}, Task: text}
	if _, err := st.Append(context.Background(), store.AppendRequest{Tenant: "t", SessionID: id, Steps: []agentmem.Step{step}}); err != nil {
		t.Fatal(err)
	}
}

// TestFollowerCommitsCursorWithDocuments: the documents of a batch and
// the cursor after it commit in one transaction of the index. A commit
// that fails writes neither (the batch is retried and then indexed
// once), and a follower that starts again while the feed holds no
// cursor of it (the process crashed before saving one there) resumes
// from the index's: nothing is indexed twice, and nothing is lost.
func TestFollowerCommitsCursorWithDocuments(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New(memstore.Options{})
	defer mem.Close()
	st := &lostCursors{Store: mem}
	backend := &batchCounter{Memory: recall.NewMemory(recall.MemoryOptions{}), fail: 1}
	ix := recall.New(backend, recall.Options{})
	var failures []error
	var mu sync.Mutex
	opts := recallview.FollowerOptions{Settle: -1, OnError: func(err error) {
		mu.Lock()
		failures = append(failures, err)
		mu.Unlock()
	}}
	pst := store.New(st)
	f := recallview.NewFollower(st, pst, &recallview.Indexer{Index: ix, Store: pst}, opts)
	stop := runFollower(t, f)
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s", Tenant: "t"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		appendTask(t, pst, "s", i, fmt.Sprintf("turn zq%d", i))
	}
	syncFollower(t, f)
	mu.Lock()
	if len(failures) != 1 || !errors.Is(failures[0], errInjected) {
		t.Errorf("failures %v, want the injected one", failures)
	}
	mu.Unlock()
	if batches, docs := backend.counts(); docs != 3 {
		t.Fatalf("%d documents written in %d batches, want the 3 turns once", docs, batches)
	}
	// The index's cursor is at the head of the feed.
	v, ok, err := ix.Checkpoint(ctx, recallview.DefaultConsumer)
	if err != nil || !ok {
		t.Fatalf("the index's cursor: %q, %v, %v", v, ok, err)
	}
	resp, err := st.ReadFeed(ctx, store.FeedRequest{Limit: store.MaxFeedLimit})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := json.Marshal(resp.Next); v != string(want) {
		t.Fatalf("the index's cursor is %s, the feed's head %s", v, want)
	}

	// A new follower (a restarted process) over the same index: the
	// feed has no cursor of it, the index has.
	stop()
	if c, err := st.LoadCursor(ctx, recallview.DefaultConsumer); err != nil || c != (store.FeedCursor{}) {
		t.Fatalf("the feed holds a cursor %+v, %v: the test needs none", c, err)
	}
	g := recallview.NewFollower(st, pst, &recallview.Indexer{Index: ix, Store: pst}, opts)
	runFollower(t, g)
	appendTask(t, pst, "s", 3, "turn zq3")
	syncFollower(t, g)
	if _, docs := backend.counts(); docs != 4 {
		t.Fatalf("%d documents written in all, want 4: the restarted follower indexed again what the index held", docs)
	}
	hits, err := ix.Search(ctx, recall.Query{Tenant: "t", Text: "zq3", K: 1})
	if err != nil || len(hits) != 1 || hits[0].Doc.ID != "s#4" {
		t.Fatalf("search after the restart: %v, %v", hits, err)
	}
}

// TestFollowerBatchDeletion: with a backend that writes batches, a
// session deleted in the middle of a batch of changes is forgotten in
// the batch's transaction, before its documents: the batch is one
// commit, and a session made again under the deleted one's ID is
// indexed as the new session.
func TestFollowerBatchDeletion(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	backend := &batchCounter{Memory: recall.NewMemory(recall.MemoryOptions{})}
	ix := recall.New(backend, recall.Options{})
	f := recallview.NewFollower(st, st, &recallview.Indexer{Index: ix, Store: st}, recallview.FollowerOptions{Settle: time.Hour, Poll: time.Hour})
	runFollower(t, f)
	create := func(id string) {
		t.Helper()
		if _, err := st.Create(ctx, store.CreateRequest{ID: id, Tenant: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	create("s")
	appendTask(t, st, "s", 0, "an indexed zqold turn")
	syncFollower(t, f)
	before, _ := backend.counts()
	create("r")
	appendTask(t, st, "r", 0, "the first zqr turn")
	appendTask(t, st, "s", 1, "another old zqold turn")
	if err := st.Delete(ctx, "t", "s"); err != nil {
		t.Fatal(err)
	}
	appendTask(t, st, "r", 1, "the second zqr turn")
	create("s")
	appendTask(t, st, "s", 2, "a new zqnew turn")
	syncFollower(t, f)
	if after, _ := backend.counts(); after != before+1 {
		t.Errorf("%d commits for the batch, want 1", after-before)
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
}
