// Package storetest is the conformance suite every store.Driver
// runs, through the portable store.Store, so that the in-memory, SQLite and PostgreSQL backends cannot drift
// apart. A backend's test calls Run once:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Config{
//			New: func(t *testing.T, clock func() time.Time) store.Driver {
//				st, err := mybackend.OpenDriver(..., mybackend.Options{Clock: clock})
//				if err != nil {
//					t.Fatal(err)
//				}
//				return st
//			},
//		})
//	}
//
// Each subtest gets a new, empty store from Config.New, driven by a manual
// Clock that the subtest advances, so expiry and pruning are tested
// exactly. Subtests are grouped by behaviour (Sessions, List, Append,
// Read, Idempotency, IdempotencyKeys, Conflicts, Atomicity, Compaction, Pinned, Branches,
// Retention, Prune, BadInput, Concurrency, Close, Import, Bound, Reopen,
// Feed, Leases, Messages, Amendments, Conversations, Agents, AssignTenant,
// Damaged),
// so one can be run alone with go test -run 'Conformance/Branches'.
package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
)

// Config describes the backend under test.
type Config struct {
	// New returns the driver of a new, empty store, isolated from the
	// stores of other subtests, that reads the time only from clock:
	// session times, entry times, expiry and the default
	// PruneRequest.Now. The suite runs it through the portable store.Store
	// (store.New) and closes it when the subtest ends (cleanups New
	// registers with t.Cleanup, such as removing a file, run after that).
	New func(t *testing.T, clock func() time.Time) store.Driver
	// Reopen, when set, closes st and returns a new store over the same
	// data (the same file or database) with the same clock, as a process
	// that restarts would. The suite then also checks that everything
	// survives a reopen. The suite closes the returned store.
	Reopen func(t *testing.T, st *store.Store) store.Driver
	// Goroutines and AppendsEach size the concurrency test: Goroutines
	// writers each append AppendsEach steps to one session with
	// ExpectedLastSeq, retrying on conflict. Zero means 8 and 50.
	Goroutines  int
	AppendsEach int
	// FeedConsumers says that the store follows its own feed under a
	// consumer of its own (a view such as a recall follower), whose
	// cursor may hold changes back. The feed tests then do not expect the
	// changes every test consumer has read to be trimmed.
	FeedConsumers bool
	// Damage, when set, damages the stored record of the session tenant/id
	// in st so that its metadata does not decode, as a row changed by
	// hand or by a faulty disk would be. The suite then checks what the
	// store does with a damaged record (the Damaged tests); a backend that
	// cannot hold one (the in-memory store) leaves it nil.
	Damage func(t *testing.T, st *store.Store, tenant, id string)
}

// Run runs the conformance suite against the backend cfg describes, one
// subtest per behaviour of the store.Driver contract, through the
// portable store.Store.
func Run(t *testing.T, cfg Config) {
	t.Helper()
	if cfg.New == nil {
		t.Fatal("storetest: Config.New is required")
	}
	if cfg.Goroutines <= 0 {
		cfg.Goroutines = 8
	}
	if cfg.AppendsEach <= 0 {
		cfg.AppendsEach = 50
	}
	s := &suite{cfg: cfg}
	for _, g := range s.groups() {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, tc.fn)
			}
		})
	}
}

// group is a set of subtests about one behaviour.
type group struct {
	name  string
	tests []namedTest
}

// namedTest is one subtest of the suite.
type namedTest struct {
	name string
	fn   func(t *testing.T)
}

// suite carries the configuration to the subtests.
type suite struct {
	cfg Config
}

func (s *suite) groups() []group {
	return []group{
		{"Sessions", s.sessionTests()},
		{"List", s.listTests()},
		{"Append", s.appendTests()},
		{"Tenants", s.tenantTests()},
		{"Read", s.readTests()},
		{"Idempotency", s.idempotencyTests()},
		{"IdempotencyKeys", s.keyTests()},
		{"Conflicts", s.conflictTests()},
		{"Atomicity", s.atomicityTests()},
		{"Compaction", s.compactionTests()},
		{"Pinned", s.pinnedTests()},
		{"Branches", s.branchTests()},
		{"Retention", s.retentionTests()},
		{"Prune", s.pruneTests()},
		{"BadInput", s.badInputTests()},
		{"Concurrency", s.concurrencyTests()},
		{"Close", s.closeTests()},
		{"Import", s.importTests()},
		{"Bound", s.boundTests()},
		{"Reopen", s.reopenTests()},
		{"Feed", s.feedTests()},
		{"Leases", s.leaseTests()},
		{"Messages", s.messagesTests()},
		{"Record", s.recordTests()},
		{"Amendments", s.amendmentTests()},
		{"Conversations", s.conversationTests()},
		{"Agents", s.agentTests()},
		{"AssignTenant", s.assignTests()},
		{"Damaged", s.damagedTests()},
	}
}

// Epoch is the time a suite Clock starts at.
var Epoch = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

// Clock is a manual clock: it stands still until told to move. Its Now
// method is what Config.New receives.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is one subtest's store, clock and context.
type env struct {
	t     *testing.T
	s     *suite
	clock *Clock
	st    *store.Store
	ctx   context.Context
}

// open returns a new, empty store for a subtest and closes it when the
// subtest ends.
func (s *suite) open(t *testing.T) *env {
	t.Helper()
	clock := NewClock(Epoch)
	d := s.cfg.New(t, clock.Now)
	if d == nil {
		t.Fatal("storetest: Config.New returned nil")
	}
	st := store.New(d)
	e := &env{t: t, s: s, clock: clock, st: st, ctx: context.Background()}
	t.Cleanup(func() { closeQuietly(t, st) })
	return e
}

// svc returns a sessions service over the store without a cache, whose
// message-level writes (AppendMessages, Pop, Clear, Record) read the
// store on every try: built on Append and Read, they rely on what every
// backend must give them.
func (e *env) svc() *sessions.Service {
	e.t.Helper()
	svc, err := sessions.New(sessions.Config{Store: e.st, CacheBytes: -1, Clock: e.clock.Now})
	if err != nil {
		e.t.Fatalf("sessions.New: %v", err)
	}
	return svc
}

// another returns a second, empty store with its own clock (for imports).
func (e *env) another() *env {
	e.t.Helper()
	return e.s.open(e.t)
}

// closeQuietly closes a store, which may already be closed.
func closeQuietly(t *testing.T, st *store.Store) {
	if err := st.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
		t.Errorf("Close: %v", err)
	}
}
