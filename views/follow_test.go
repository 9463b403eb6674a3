package views_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	apply := func(_ context.Context, changes []store.Change, _ store.FeedCursor) (int, error) {
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

// savesCounted is a store that counts the cursors saved in its feed.
type savesCounted struct {
	*store.Store
	mu    sync.Mutex
	saves []store.FeedCursor
}

func (s *savesCounted) SaveCursor(ctx context.Context, consumer string, c store.FeedCursor) error {
	s.mu.Lock()
	s.saves = append(s.saves, c)
	s.mu.Unlock()
	return s.Store.SaveCursor(ctx, consumer, c)
}

// TestFollowerSavesCursorLazily: a follower saves its cursor in the feed
// at most every SaveEvery, not after every batch (each save is a durable
// commit), and saves what it applied when it stops, so that the next
// follower resumes after it.
func TestFollowerSavesCursorLazily(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New(memstore.Options{})
	defer mem.Close()
	st := &savesCounted{Store: mem}
	var mu sync.Mutex
	applied := 0
	apply := func(_ context.Context, changes []store.Change, _ store.FeedCursor) (int, error) {
		mu.Lock()
		applied += len(changes)
		mu.Unlock()
		return len(changes), nil
	}
	f := views.NewFollower(st, apply, views.Options{Consumer: "lazy", SaveEvery: time.Hour, Settle: -1})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = f.Run(rctx) }()
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 { // five batches
		if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{agentmem.WithInfo(&agentmem.TaskStep{Task: fmt.Sprint(i)}, agentmem.StepInfo{ID: fmt.Sprint(i)})}}); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st.mu.Lock()
	during := len(st.saves)
	st.mu.Unlock()
	if during != 1 { // the registration of the zero cursor
		t.Fatalf("%d cursors saved while following, want only the registration", during)
	}
	head, err := st.ReadFeed(ctx, store.FeedRequest{Limit: store.MaxFeedLimit})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if c, err := st.LoadCursor(ctx, "lazy"); err != nil || c != head.Next {
		t.Fatalf("the cursor saved when the follower stopped: %+v, %v; want the feed's end %+v", c, err, head.Next)
	}
	mu.Lock()
	defer mu.Unlock()
	if applied != 5 {
		t.Fatalf("%d changes applied, want the 5 appends", applied)
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
		apply := func(_ context.Context, changes []store.Change, _ store.FeedCursor) (int, error) {
			got = append(got, changes...)
			return len(changes), nil
		}
		f := views.NewFollower(st, apply, views.Options{Consumer: fmt.Sprintf("test-%v", without), WithoutEntries: without})
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

// TestOptionsWithDefaults: a view's defaults fill the zero Consumer and
// Settle only, and a zero default Settle leaves Settle to NewFollower.
func TestOptionsWithDefaults(t *testing.T) {
	for _, c := range []struct {
		in, want views.Options
		settle   time.Duration
	}{
		{views.Options{}, views.Options{Consumer: "v", Settle: time.Second}, time.Second},
		{views.Options{}, views.Options{Consumer: "v"}, 0},
		{views.Options{Consumer: "mine", Settle: -1, Batch: 7}, views.Options{Consumer: "mine", Settle: -1, Batch: 7}, time.Second},
	} {
		got := c.in.WithDefaults("v", c.settle)
		if got.Consumer != c.want.Consumer || got.Settle != c.want.Settle || got.Batch != c.want.Batch {
			t.Errorf("%+v.WithDefaults(v, %v) = consumer %q, settle %v, batch %d; want %q, %v, %d", c.in, c.settle, got.Consumer, got.Settle, got.Batch, c.want.Consumer, c.want.Settle, c.want.Batch)
		}
	}
}

// TestStartFor: StartFor makes the view on the store's own feed when it
// is given none, and runs it until stop: the view applies what is
// appended.
func TestStartFor(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	var applied atomic.Int64
	var made store.Feed
	f, stop := views.StartFor(nil, st, nil, func(feed store.Feed) *views.Follower {
		made = feed
		return views.NewFollower(feed, func(_ context.Context, changes []store.Change, _ store.FeedCursor) (int, error) {
			applied.Add(int64(len(changes)))
			return len(changes), nil
		}, views.Options{Consumer: "startfor"})
	})
	defer stop()
	if made == nil || f == nil {
		t.Fatalf("StartFor made the view on feed %v: %v", made, f)
	}
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{agentmem.WithInfo(&agentmem.TaskStep{Task: "t"}, agentmem.StepInfo{ID: "t"})}}); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if applied.Load() == 0 {
		t.Error("the view started applied nothing")
	}
}
