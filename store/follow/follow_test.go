package follow_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/follow"
	"github.com/agentmem/agentmem/store/memstore"
)

// TestFollowerResumes: a follower applies every change, Sync waits for
// them, a failing batch is applied again, and a follower started later
// under the same name resumes after what the first applied.
func TestFollowerResumes(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	var mu sync.Mutex
	seen := map[int64]int{}
	fail := true
	apply := func(_ context.Context, changes []store.Change) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			fail = false
			return 0, errors.New("try again")
		}
		for _, c := range changes {
			seen[c.Seq]++
		}
		return len(changes), nil
	}
	var errs []error
	run := func() (*follow.Follower, func()) {
		f := follow.New(st, apply, follow.Options{Consumer: "test", OnError: func(err error) { errs = append(errs, err) }})
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = f.Run(rctx) }()
		return f, func() { cancel(); <-done }
	}
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	appendStep := func(task string) {
		if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{agentmem.WithInfo(&agentmem.TaskStep{Task: task}, agentmem.StepInfo{ID: task})}}); err != nil {
			t.Fatal(err)
		}
	}
	appendStep("one")
	f, stop := run()
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	stop()
	appendStep("two")
	f, stop = run()
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	if seen[1] != 1 || seen[2] != 1 || len(errs) != 1 {
		t.Fatalf("applied %v, errors %v: want each change once, after one failure", seen, errs)
	}
	if st := f.Status(); st.Applied != 1 || st.Errors != 0 {
		t.Fatalf("status %+v", st)
	}
}

// TestFollowerWithoutEntries: a follower with WithoutEntries is given the
// appends with their sessions and without their entries; one without it,
// with them.
func TestFollowerWithoutEntries(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	step := agentmem.WithInfo(&agentmem.TaskStep{Task: "one"}, agentmem.StepInfo{ID: "one"})
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{step}}); err != nil {
		t.Fatal(err)
	}
	// Both consumers hold the feed from the start.
	for _, without := range []bool{false, true} {
		if err := st.SaveCursor(ctx, fmt.Sprintf("test-%v", without), store.FeedCursor{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, without := range []bool{false, true} {
		var got []store.Change
		apply := func(_ context.Context, changes []store.Change) (int, error) {
			got = append(got, changes...)
			return len(changes), nil
		}
		f := follow.New(st, apply, follow.Options{Consumer: fmt.Sprintf("test-%v", without), WithoutEntries: without})
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = f.Run(rctx) }()
		err := f.Sync(ctx)
		cancel()
		<-done
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Session == nil || got[0].Session.ID != "s" || (got[0].Entry == nil) != without {
			t.Fatalf("WithoutEntries %v: changes %+v", without, got)
		}
	}
}
