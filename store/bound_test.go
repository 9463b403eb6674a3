package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/tokenizer"
)

// flaky is a store whose appends fail in the ways a network does: before
// the write, or after it was committed (the answer is lost).
type flaky struct {
	store.Driver
	mu          sync.Mutex
	failBefore  int // fail this many appends without writing
	failAfter   int // write, then fail, this many appends
	appendCalls int
}

var errLost = errors.New("connection reset by peer")

func (f *flaky) Append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	f.mu.Lock()
	f.appendCalls++
	before, after := f.failBefore > 0, f.failAfter > 0 && f.failBefore == 0
	if before {
		f.failBefore--
	} else if after {
		f.failAfter--
	}
	f.mu.Unlock()
	if before {
		return nil, errLost
	}
	resp, err := f.Driver.Append(ctx, req)
	if after && err == nil {
		return nil, errLost
	}
	return resp, err
}

func newBound(t *testing.T) (*flaky, *store.Bound) {
	t.Helper()
	ctx := context.Background()
	st := &flaky{Driver: memstore.New(memstore.Options{})}
	b, err := store.CreateMemory(ctx, store.New(st), store.CreateRequest{ID: "s"}, agentmem.Options{Counter: tokenizer.NewHeuristic()})
	if err != nil {
		t.Fatal(err)
	}
	return st, b
}

func logSeqs(t *testing.T, st *store.Store) []int64 {
	t.Helper()
	resp, err := st.Read(context.Background(), store.ReadRequest{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, e := range resp.Entries {
		out = append(out, e.Seq)
	}
	return out
}

func TestBoundRetriesLostAnswers(t *testing.T) {
	ctx := context.Background()
	st, b := newBound(t)
	if _, err := b.Add(ctx, &agentmem.TaskStep{Task: "t"}); err != nil {
		t.Fatal(err)
	}
	// The write is committed but its answer is lost: the retry finds the
	// step stored and nothing is stored twice.
	st.failAfter = 1
	info, err := b.Add(ctx, &agentmem.TaskStep{Task: "u"})
	if err != nil || info.Number != 2 {
		t.Fatalf("Add after a lost answer: %+v, %v", info, err)
	}
	// The write never happened: the retry makes it.
	st.failBefore = 2
	if info, err := b.Add(ctx, &agentmem.TaskStep{Task: "v"}); err != nil || info.Number != 3 {
		t.Fatalf("Add after two failed tries: %+v, %v", info, err)
	}
	// A summary whose answer is lost is not stored twice either.
	for range 3 {
		if _, err := b.Add(ctx, &agentmem.ActionStep{Observation: "o"}); err != nil {
			t.Fatal(err)
		}
	}
	st.failAfter = 1
	if _, err := b.SetSummary(ctx, "sum", 1); err != nil {
		t.Fatalf("SetSummary after a lost answer: %v", err)
	}
	if got := logSeqs(t, store.New(st)); len(got) != 8 || got[7] != 8 {
		t.Fatalf("log %v: want 6 steps, a summary and a compaction", got)
	}
	if _, err := b.Add(ctx, &agentmem.TaskStep{Task: "w"}); err != nil {
		t.Fatalf("Add after the retried compaction: %v", err)
	}
	// A store that keeps failing: the add fails and changes nothing.
	st.failBefore = 10
	n := b.Len()
	if _, err := b.Add(ctx, &agentmem.TaskStep{Task: "x"}); !errors.Is(err, errLost) || b.Len() != n {
		t.Fatalf("Add to a failing store: %v, %d steps", err, b.Len())
	}
	if len(logSeqs(t, store.New(st))) != 9 {
		t.Fatal("a failed add was stored")
	}
}

func TestBoundDoesNotRetryKnownErrors(t *testing.T) {
	ctx := context.Background()
	st, b := newBound(t)
	other, err := store.OpenMemory(ctx, store.New(st), "s", agentmem.Options{Counter: tokenizer.NewHeuristic()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Add(ctx, &agentmem.TaskStep{Task: "first"}); err != nil {
		t.Fatal(err)
	}
	calls := st.appendCalls
	if _, err := b.Add(ctx, &agentmem.TaskStep{Task: "stale"}); !errors.Is(err, agentmem.ErrConflict) {
		t.Fatalf("stale add: %v", err)
	}
	if st.appendCalls != calls+1 {
		t.Fatalf("a conflict was retried: %d calls", st.appendCalls-calls)
	}
	if _, err := store.OpenMemory(ctx, store.New(st), "s", agentmem.Options{Journal: nopJournal{}}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("OpenMemory with a journal: %v", err)
	}
	if f := (*flaky)(nil); !b.Store().As(&f) || f != st || b.Session().ID != "s" {
		t.Fatal("Store() or Session()")
	}
}

type nopJournal struct{}

func (nopJournal) Append(context.Context, []agentmem.Step) ([]int, error) { return nil, nil }
func (nopJournal) Compact(context.Context, agentmem.JournalCompaction) ([]int, error) {
	return nil, nil
}

// TestBoundReloadDuringAdds reloads while adds run: no acknowledged step
// is missing from the memory afterwards.
func TestBoundReloadDuringAdds(t *testing.T) {
	ctx := context.Background()
	_, b := newBound(t)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for range 50 {
			if _, err := b.Add(ctx, &agentmem.TaskStep{Task: "x"}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for range 20 {
			if err := b.Reload(ctx); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	if err := b.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 50 {
		t.Fatalf("%d steps after concurrent adds and reloads, want 50", b.Len())
	}
}
