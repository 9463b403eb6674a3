package views_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/views"
)

// clock is a store's manual clock: leases expire when a test moves it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// clockedStore returns an in-memory store on a manual clock, holding the
// session "s" that appendTask appends to. It is closed when the test
// ends, after the followers the test started.
func clockedStore(t *testing.T) (*store.Store, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	st := memstore.New(memstore.Options{Clock: c.now})
	t.Cleanup(func() { st.Close() })
	if _, err := st.Create(context.Background(), store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	return st, c
}

// applied records which follower applied which change.
type applied struct {
	mu sync.Mutex
	by map[int64][]string // seq -> the followers that applied it
}

func (a *applied) fn(name string) views.Func {
	return func(_ context.Context, changes []store.Change, _ store.FeedCursor) (int, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.by == nil {
			a.by = map[int64][]string{}
		}
		for _, c := range changes {
			a.by[c.Seq] = append(a.by[c.Seq], name)
		}
		return len(changes), nil
	}
}

// want fails unless each seq was applied by exactly the followers named.
func (a *applied) want(t *testing.T, want map[int64][]string) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if fmt.Sprint(a.by) != fmt.Sprint(want) {
		t.Fatalf("changes applied by %v, want %v", a.by, want)
	}
}

// exclusive is a running exclusive follower and what it was told of its
// lease.
type exclusive struct {
	*views.Follower
	leases chan views.LeaseStatus
	errs   chan error
	stop   func()
}

func startExclusive(t *testing.T, feed store.Feed, apply views.Func, opts views.Options) *exclusive {
	t.Helper()
	x := &exclusive{leases: make(chan views.LeaseStatus, 100), errs: make(chan error, 100)}
	opts.Consumer, opts.Exclusive, opts.Settle = "excl", true, -1
	opts.OnLease = func(l views.LeaseStatus) { x.leases <- l }
	opts.OnError = func(err error) {
		select {
		case x.errs <- err:
		default:
		}
	}
	x.Follower = views.NewFollower(feed, apply, opts)
	x.stop = views.Start(x.Follower, nil)
	t.Cleanup(x.stop)
	return x
}

// waitLease waits until the follower is told that its lease is held, or
// not, by holder.
func (x *exclusive) waitLease(t *testing.T, held bool, holder string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l := <-x.leases:
			if l.Held == held && l.Holder == holder {
				return
			}
		case <-timeout:
			t.Fatalf("follower %s: never told that its lease is held %v by %q (status %+v)", x.Status().Lease.ID, held, holder, x.Status().Lease)
		}
	}
}

func (x *exclusive) sync(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := x.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

func appendTask(t *testing.T, st *store.Store, task string) {
	t.Helper()
	if _, err := st.Append(context.Background(), store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{agentmem.WithInfo(&agentmem.TaskStep{Task: task}, agentmem.StepInfo{ID: task})}}); err != nil {
		t.Fatal(err)
	}
}

// TestExclusiveOneApplies: of two exclusive followers of one consumer,
// only the one holding the lease applies changes; the other waits, and
// takes over from the cursor saved when the first stops and releases
// the lease, so that every change is applied once.
func TestExclusiveOneApplies(t *testing.T) {
	st, _ := clockedStore(t)
	var got applied
	opts := views.Options{LeaseTTL: time.Hour, LeasePoll: 5 * time.Millisecond}
	opts.Holder = "a"
	a := startExclusive(t, st, got.fn("a"), opts)
	a.waitLease(t, true, "a")
	appendTask(t, st, "one")
	a.sync(t)
	opts.Holder = "b"
	b := startExclusive(t, st, got.fn("b"), opts)
	b.waitLease(t, false, "a")
	appendTask(t, st, "two")
	appendTask(t, st, "three")
	a.sync(t)
	if l := b.Status().Lease; l == nil || l.Held || l.Holder != "a" || l.ID != "b" {
		t.Fatalf("the waiting follower's lease status %+v", l)
	}
	a.stop()
	if l := a.Status().Lease; l.Held || l.Holder != "" {
		t.Fatalf("a stopped follower's lease status %+v", l)
	}
	b.waitLease(t, true, "b")
	appendTask(t, st, "four")
	b.sync(t)
	got.want(t, map[int64][]string{1: {"a"}, 2: {"a"}, 3: {"a"}, 4: {"b"}})
	if l := b.Status().Lease; l == nil || !l.Held || l.Holder != "b" {
		t.Fatalf("the holder's lease status %+v", l)
	}
}

// crashable is a process's handle on a shared store that can crash: it
// then neither saves its cursor, nor renews nor releases its lease.
type crashable struct {
	*store.Store
	crashed atomic.Bool
}

var errCrashed = errors.New("the process crashed")

func (c *crashable) SaveLeasedCursor(ctx context.Context, consumer, holder string, cur store.FeedCursor) error {
	if c.crashed.Load() {
		return errCrashed
	}
	return c.Store.SaveLeasedCursor(ctx, consumer, holder, cur)
}

func (c *crashable) RenewLease(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	if c.crashed.Load() {
		return store.Lease{}, errCrashed
	}
	return c.Store.RenewLease(ctx, req)
}

func (c *crashable) ReleaseLease(ctx context.Context, consumer, holder string) error {
	if c.crashed.Load() {
		return errCrashed
	}
	return c.Store.ReleaseLease(ctx, consumer, holder)
}

// TestExclusiveTakeoverAfterCrash: when the holder crashes (it neither
// saves its cursor nor releases its lease), the waiting follower takes
// over once the lease expires by the store's clock, and resumes from the
// cursor saved: nothing is skipped, and only the batch whose cursor the
// holder did not save is applied again.
func TestExclusiveTakeoverAfterCrash(t *testing.T) {
	ctx := context.Background()
	const ttl = time.Minute
	st, c := clockedStore(t)
	var got applied
	proc := &crashable{Store: st}
	opts := views.Options{LeaseTTL: ttl, LeasePoll: 5 * time.Millisecond, SaveEvery: -1}
	opts.Holder = "a"
	a := startExclusive(t, proc, got.fn("a"), opts)
	a.waitLease(t, true, "a")
	opts.Holder = "b"
	b := startExclusive(t, st, got.fn("b"), opts)
	b.waitLease(t, false, "a")
	appendTask(t, st, "one")
	appendTask(t, st, "two")
	a.sync(t)
	// The holder applies a batch and crashes before it saves its cursor.
	proc.crashed.Store(true)
	appendTask(t, st, "three")
	a.sync(t)
	a.stop()
	// Its lease is still its own until it expires.
	if l, err := st.AcquireLease(ctx, store.LeaseRequest{Consumer: "excl", Holder: "probe", TTL: ttl}); err != nil || l.Held || l.Holder != "a" {
		t.Fatalf("the crashed holder's lease: %+v, %v", l, err)
	}
	appendTask(t, st, "four")
	c.advance(ttl)
	b.waitLease(t, true, "b")
	b.sync(t)
	got.want(t, map[int64][]string{1: {"a"}, 2: {"a"}, 3: {"a", "b"}, 4: {"b"}})
	if cur, err := st.LoadCursor(ctx, "excl"); err != nil || cur.Pos != 4 {
		t.Fatalf("the cursor after the takeover: %+v, %v; want past the four changes", cur, err)
	}
}

// TestExclusiveStopsWhenTakenOver: a holder whose lease another follower
// took over (it expired by the store's clock) learns it at its next
// renewal, reports it, and waits for the lease instead of applying.
func TestExclusiveStopsWhenTakenOver(t *testing.T) {
	st, c := clockedStore(t)
	var got applied
	// A short TTL: the holder renews it every 100ms.
	opts := views.Options{LeaseTTL: 300 * time.Millisecond, LeasePoll: 5 * time.Millisecond, SaveEvery: -1}
	opts.Holder = "a"
	a := startExclusive(t, st, got.fn("a"), opts)
	a.waitLease(t, true, "a")
	appendTask(t, st, "one")
	a.sync(t)
	c.advance(time.Hour) // a's lease expires by the store's clock
	opts.Holder = "b"
	b := startExclusive(t, st, got.fn("b"), opts)
	b.waitLease(t, true, "b")
	a.waitLease(t, false, "b")
	found := false
	for len(a.errs) > 0 && !found {
		found = strings.Contains((<-a.errs).Error(), `taken over by "b"`)
	}
	if !found {
		t.Errorf("the holder that lost its lease reported no takeover")
	}
	appendTask(t, st, "two")
	b.sync(t)
	got.want(t, map[int64][]string{1: {"a"}, 2: {"b"}})
}

// leaseless is a feed without leases.
type leaseless struct{ store.Feed }

// TestExclusiveNeedsLeases: an exclusive follower of a feed without
// leases refuses to run rather than apply what others apply too.
func TestExclusiveNeedsLeases(t *testing.T) {
	st := memstore.New(memstore.Options{})
	defer st.Close()
	var got applied
	var reported []error
	f := views.NewFollower(leaseless{st}, got.fn("a"), views.Options{Consumer: "excl", Exclusive: true, OnError: func(err error) { reported = append(reported, err) }})
	err := f.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "store.Leaser") || len(reported) != 1 {
		t.Fatalf("Run: %v, reported %v; want a refusal naming store.Leaser", err, reported)
	}
	if f.Status().Lease == nil || f.Status().Lease.ID == "" {
		t.Fatalf("status %+v: want the follower's lease ID", f.Status())
	}
}
