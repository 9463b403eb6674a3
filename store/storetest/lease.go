package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// leaseTests check store.Leaser: one holder at a time per consumer, by
// the store's clock; renewal by the holder of record only; takeover once
// a lease expires; release, which only the holder can do; and cursors
// that only the holder saves.
func (s *suite) leaseTests() []namedTest {
	const ttl = 30 * time.Second
	return []namedTest{
		{"AcquireRenewRelease", func(t *testing.T) {
			e := s.open(t)
			l := e.leaser()
			a := store.LeaseRequest{Consumer: "view", Holder: "host-a:1:x", TTL: ttl}
			b := store.LeaseRequest{Consumer: "view", Holder: "host-b:2:y", TTL: ttl}
			e.wantLease(e.acquire(l, a), true, a.Holder, Epoch.Add(ttl), "A takes the free lease")
			e.wantLease(e.acquire(l, a), true, a.Holder, Epoch.Add(ttl), "A takes it again")
			e.wantLease(e.acquire(l, b), false, a.Holder, Epoch.Add(ttl), "B while A holds it")
			e.clock.Advance(20 * time.Second)
			e.wantLease(e.renew(l, a), true, a.Holder, Epoch.Add(20*time.Second+ttl), "A renews")
			e.wantLease(e.renew(l, b), false, a.Holder, Epoch.Add(20*time.Second+ttl), "B renews what it does not hold")
			e.clock.Advance(20 * time.Second) // past A's first expiry, not its renewed one
			e.wantLease(e.acquire(l, b), false, a.Holder, Epoch.Add(20*time.Second+ttl), "B after A renewed")
			// Another consumer's lease is another lease.
			other := b
			other.Consumer = "other-view"
			e.wantLease(e.acquire(l, other), true, b.Holder, Epoch.Add(40*time.Second+ttl), "B takes another consumer's lease")
			if err := l.ReleaseLease(e.ctx, a.Consumer, a.Holder); err != nil {
				t.Fatalf("ReleaseLease by its holder: %v", err)
			}
			e.wantLease(e.renew(l, a), false, "", time.Time{}, "A renews what it released")
			e.wantLease(e.acquire(l, b), true, b.Holder, Epoch.Add(40*time.Second+ttl), "B takes the released lease at once")
			// Releasing what nobody holds does nothing.
			if err := l.ReleaseLease(e.ctx, "never-leased", a.Holder); err != nil {
				t.Fatalf("ReleaseLease of a lease never taken: %v", err)
			}
		}},
		{"TakeoverAfterExpiry", func(t *testing.T) {
			e := s.open(t)
			l := e.leaser()
			a := store.LeaseRequest{Consumer: "view", Holder: "a", TTL: ttl}
			b := store.LeaseRequest{Consumer: "view", Holder: "b", TTL: ttl}
			e.acquire(l, a)
			e.clock.Advance(ttl - time.Microsecond)
			e.wantLease(e.acquire(l, b), false, "a", Epoch.Add(ttl), "B a microsecond before A's lease expires")
			e.clock.Advance(time.Microsecond)
			e.wantLease(e.acquire(l, b), true, "b", Epoch.Add(2*ttl), "B when A's lease expires")
			// A crashed and comes back: its lease is B's now.
			e.wantLease(e.renew(l, a), false, "b", Epoch.Add(2*ttl), "A renews the lease B took over")
			e.wantLease(e.acquire(l, a), false, "b", Epoch.Add(2*ttl), "A takes it back while B holds it")
		}},
		{"LateRenewalKeepsAnUntakenLease", func(t *testing.T) {
			e := s.open(t)
			l := e.leaser()
			a := store.LeaseRequest{Consumer: "view", Holder: "a", TTL: ttl}
			e.acquire(l, a)
			e.clock.Advance(2 * ttl)
			// Nobody took it meanwhile: nobody moved the cursor either.
			e.wantLease(e.renew(l, a), true, "a", Epoch.Add(3*ttl), "A renews late, its lease untaken")
		}},
		{"ReleaseByAnotherDoesNothing", func(t *testing.T) {
			e := s.open(t)
			l := e.leaser()
			a := store.LeaseRequest{Consumer: "view", Holder: "a", TTL: ttl}
			b := store.LeaseRequest{Consumer: "view", Holder: "b", TTL: ttl}
			e.acquire(l, a)
			if err := l.ReleaseLease(e.ctx, "view", "b"); err != nil {
				t.Fatalf("ReleaseLease by a holder that does not hold it: %v", err)
			}
			e.wantLease(e.acquire(l, b), false, "a", Epoch.Add(ttl), "B after releasing A's lease")
			e.wantLease(e.renew(l, a), true, "a", Epoch.Add(ttl), "A after B released its lease")
		}},
		{"OnlyTheHolderSavesTheCursor", func(t *testing.T) {
			e := s.open(t)
			l := e.leaser()
			f := e.feed()
			e.create(store.CreateRequest{ID: "s"})
			e.appendSteps("s", steps("s", 3)...)
			resp := e.readAtLeast(f, store.FeedRequest{Limit: 1}, 1)
			c1 := resp.Next
			c2 := e.readAtLeast(f, store.FeedRequest{After: c1, Limit: 1}, 1).Next
			c3 := e.readAtLeast(f, store.FeedRequest{After: c2, Limit: 1}, 1).Next
			a := store.LeaseRequest{Consumer: "view", Holder: "a", TTL: ttl}
			b := store.LeaseRequest{Consumer: "view", Holder: "b", TTL: ttl}
			e.wantErr(l.SaveLeasedCursor(e.ctx, "view", "a", c1), store.ErrLeaseLost, "a save before A takes the lease")
			e.wantCursor(f, "view", store.FeedCursor{}, "after a refused save")
			e.acquire(l, a)
			if err := l.SaveLeasedCursor(e.ctx, "view", "a", c1); err != nil {
				t.Fatalf("SaveLeasedCursor by the holder: %v", err)
			}
			e.wantCursor(f, "view", c1, "after the holder saved it")
			err := l.SaveLeasedCursor(e.ctx, "view", "b", c2)
			e.wantErr(err, store.ErrLeaseLost, "a save by another holder")
			e.wantErr(err, agentmem.ErrConflict, "a save by another holder")
			e.wantCursor(f, "view", c1, "after another holder's save")
			e.clock.Advance(ttl)
			e.acquire(l, b)
			// A's lease expired and B took it over: A's save, late, fails.
			e.wantErr(l.SaveLeasedCursor(e.ctx, "view", "a", c3), store.ErrLeaseLost, "a save by the holder whose lease was taken over")
			e.wantCursor(f, "view", c1, "after the old holder's save")
			if err := l.SaveLeasedCursor(e.ctx, "view", "b", c2); err != nil {
				t.Fatalf("SaveLeasedCursor by the new holder: %v", err)
			}
			e.wantCursor(f, "view", c2, "after the new holder saved it")
			// As SaveCursor, a cursor behind the one saved is ignored.
			if err := l.SaveLeasedCursor(e.ctx, "view", "b", c1); err != nil {
				t.Fatalf("SaveLeasedCursor of an older cursor: %v", err)
			}
			e.wantCursor(f, "view", c2, "after saving an older cursor")
			if err := l.ReleaseLease(e.ctx, "view", "b"); err != nil {
				t.Fatal(err)
			}
			e.wantErr(l.SaveLeasedCursor(e.ctx, "view", "b", c3), store.ErrLeaseLost, "a save after releasing the lease")
			e.wantCursor(f, "view", c2, "after a save past the release")
		}},
		{"OneOfManyTakesIt", func(t *testing.T) {
			e := s.open(t)
			l := e.leaser()
			const n = 8
			var (
				wg   sync.WaitGroup
				mu   sync.Mutex
				held []string
				errs []error
			)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := l.AcquireLease(e.ctx, store.LeaseRequest{Consumer: "view", Holder: fmt.Sprintf("h%d", i), TTL: ttl})
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						errs = append(errs, err)
					} else if res.Held {
						held = append(held, res.Holder)
					}
				}()
			}
			wg.Wait()
			if len(errs) > 0 || len(held) != 1 {
				t.Fatalf("%d holders took one lease at once: %q held it, errors %v; want exactly one", n, held, errs)
			}
		}},
		{"SurvivesReopen", func(t *testing.T) {
			if s.cfg.Reopen == nil {
				t.Skip("storetest: Config.Reopen is not set (an in-memory store does not outlive its process)")
			}
			e := s.open(t)
			e.acquire(e.leaser(), store.LeaseRequest{Consumer: "view", Holder: "a", TTL: ttl})
			e.st = store.New(s.cfg.Reopen(t, e.st))
			t.Cleanup(func() { closeQuietly(t, e.st) })
			e.wantLease(e.acquire(e.leaser(), store.LeaseRequest{Consumer: "view", Holder: "b", TTL: ttl}), false, "a", Epoch.Add(ttl), "B after a reopen")
		}},
		{"BadInput", func(t *testing.T) {
			e := s.open(t)
			l := e.leaser()
			for _, req := range []store.LeaseRequest{
				{Consumer: "", Holder: "a", TTL: ttl},
				{Consumer: "#view", Holder: "a", TTL: ttl},
				{Consumer: "view", Holder: "", TTL: ttl},
				{Consumer: "view", Holder: "a\nb", TTL: ttl},
				{Consumer: "view", Holder: strings.Repeat("h", store.MaxHolderLen+1), TTL: ttl},
				{Consumer: "view", Holder: "a", TTL: 0},
				{Consumer: "view", Holder: "a", TTL: -time.Second},
				{Consumer: "view", Holder: "a", TTL: store.MaxLeaseTTL + time.Second},
			} {
				_, err := l.AcquireLease(e.ctx, req)
				e.wantErr(err, agentmem.ErrInvalid, fmt.Sprintf("AcquireLease(%+q)", req))
				_, err = l.RenewLease(e.ctx, req)
				e.wantErr(err, agentmem.ErrInvalid, fmt.Sprintf("RenewLease(%+q)", req))
			}
			e.wantErr(l.ReleaseLease(e.ctx, "view", ""), agentmem.ErrInvalid, "ReleaseLease without a holder")
			e.wantErr(l.SaveLeasedCursor(e.ctx, "view", "", store.FeedCursor{}), agentmem.ErrInvalid, "SaveLeasedCursor without a holder")
			e.wantErr(l.SaveLeasedCursor(e.ctx, "view", "a", store.FeedCursor{Pos: -1}), agentmem.ErrInvalid, "SaveLeasedCursor of a negative cursor")
			// Nothing was taken.
			e.wantLease(e.acquire(l, store.LeaseRequest{Consumer: "view", Holder: "b", TTL: ttl}), true, "b", Epoch.Add(ttl), "B after the refused requests")
		}},
	}
}

// leaser returns the store's leases; every backend has them.
func (e *env) leaser() store.Leaser {
	e.t.Helper()
	if !e.st.Supports(store.CanLease) {
		e.t.Fatal("the store's driver does not implement store.Leaser")
	}
	return e.st
}

func (e *env) acquire(l store.Leaser, req store.LeaseRequest) store.Lease {
	e.t.Helper()
	res, err := l.AcquireLease(e.ctx, req)
	if err != nil {
		e.t.Fatalf("AcquireLease(%+v): %v", req, err)
	}
	return res
}

func (e *env) renew(l store.Leaser, req store.LeaseRequest) store.Lease {
	e.t.Helper()
	res, err := l.RenewLease(e.ctx, req)
	if err != nil {
		e.t.Fatalf("RenewLease(%+v): %v", req, err)
	}
	return res
}

// wantLease fails unless got is held (or not), by holder, until expires.
func (e *env) wantLease(got store.Lease, held bool, holder string, expires time.Time, what string) {
	e.t.Helper()
	if got.Held != held || got.Holder != holder || !got.Expires.Equal(expires) {
		e.t.Fatalf("%s: lease %+v; want held %v by %q until %v", what, got, held, holder, expires)
	}
}

// wantCursor fails unless consumer's saved cursor is want.
func (e *env) wantCursor(f store.Feed, consumer string, want store.FeedCursor, what string) {
	e.t.Helper()
	got, err := f.LoadCursor(e.ctx, consumer)
	if err != nil {
		e.t.Fatalf("%s: LoadCursor: %v", what, err)
	}
	if got != want {
		e.t.Fatalf("%s: cursor %+v, want %+v", what, got, want)
	}
}
