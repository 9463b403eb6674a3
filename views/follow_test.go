package views_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/views"
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
	run := func() (*views.Follower, func()) {
		f := views.NewFollower(st, apply, views.Options{Consumer: "test", OnError: func(err error) { errs = append(errs, err) }})
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
