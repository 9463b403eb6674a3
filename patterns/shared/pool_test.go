package shared

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/patterns/internal/ptest"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
)

var start = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func open(t *testing.T, opts Options) *Pool {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = ptest.NewClock(start, time.Second).Now
	}
	p, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func join(t *testing.T, p *Pool, agent string, teams ...string) {
	t.Helper()
	if err := p.Join(agent, teams...); err != nil {
		t.Fatal(err)
	}
}

func share(t *testing.T, p *Pool, from, text string, scope Scope) Entry {
	t.Helper()
	e, err := p.Share(context.Background(), from, text, scope, Provenance{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func texts(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Text
	}
	return out
}

// team is a pool with alice and bob in backend, bob and carol in
// frontend, and dave in no team.
func team(t *testing.T, opts Options) *Pool {
	p := open(t, opts)
	join(t, p, "alice", "backend")
	join(t, p, "bob", "backend", "frontend")
	join(t, p, "carol", "frontend")
	join(t, p, "dave")
	return p
}

func TestScopes(t *testing.T) {
	p := team(t, Options{})
	share(t, p, "alice", "alice private note", Private())
	share(t, p, "alice", "backend team note", Team("backend"))
	share(t, p, "carol", "frontend team note", Team("frontend"))
	share(t, p, "dave", "global note", Global())
	want := map[string][]string{
		"alice": {"alice private note", "backend team note", "global note"},
		"bob":   {"backend team note", "frontend team note", "global note"},
		"carol": {"frontend team note", "global note"},
		"dave":  {"global note"},
	}
	for agent, w := range want {
		got, err := p.Entries(agent, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(texts(got), w) {
			t.Errorf("%s reads %q, want %q", agent, texts(got), w)
		}
	}
	if _, err := p.Entries("mallory", 0); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("non-member: %v", err)
	}
	if _, err := p.Share(context.Background(), "carol", "x", Team("backend"), Provenance{}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("share to a team not joined: %v", err)
	}
	if _, err := p.Share(context.Background(), "mallory", "x", Global(), Provenance{}); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("share by a non-member: %v", err)
	}
	for _, bad := range []Scope{{Kind: "public"}, {Kind: ScopeTeam}, {Kind: ScopeGlobal, Team: "x"}} {
		if _, err := p.Share(context.Background(), "alice", "x", bad, Provenance{}); !errors.Is(err, agentmem.ErrInvalid) {
			t.Fatalf("scope %+v: %v", bad, err)
		}
	}
	// Leaving a team's membership takes its entries out of reach.
	p.Leave("bob")
	if _, err := p.Entries("bob", 0); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("after Leave: %v", err)
	}
}

func TestProvenance(t *testing.T) {
	clock := ptest.NewClock(start, 0)
	p := open(t, Options{Clock: clock.Now})
	join(t, p, "researcher")
	learned := start.Add(-time.Hour)
	clock.Advance(5 * time.Minute)
	e, err := p.RegisterFact(context.Background(), "researcher", "The API rate limit is 600 requests per minute.", Global(),
		Provenance{Agent: "someone else", Time: learned, SessionID: "run-7", Step: 12, Source: "https://docs.example.com/limits"})
	if err != nil {
		t.Fatal(err)
	}
	want := Provenance{Agent: "researcher", Time: learned, SessionID: "run-7", Step: 12, Source: "https://docs.example.com/limits"}
	if e.Provenance != want || e.Author != "researcher" || e.Kind != Fact || !e.Time.Equal(start.Add(5*time.Minute)) || e.Seq != 1 {
		t.Fatalf("entry = %+v", e)
	}
	got, _ := p.Entries("researcher", 0)
	if len(got) != 1 || got[0].Provenance != want {
		t.Fatalf("read back %+v", got)
	}
}

func TestRegisterFactOnce(t *testing.T) {
	p := team(t, Options{})
	ctx := context.Background()
	first, err := p.RegisterFact(ctx, "alice", "Postgres runs on port 5433", Team("backend"), Provenance{Source: "ops wiki"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := p.RegisterFact(ctx, "bob", "  postgres RUNS on port 5433 ", Team("backend"), Provenance{Source: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Fatalf("second registration = %+v, want the first %+v", again, first)
	}
	// The same text in another scope is another fact.
	other, err := p.RegisterFact(ctx, "bob", "Postgres runs on port 5433", Global(), Provenance{})
	if err != nil || other.ID == first.ID {
		t.Fatalf("global fact = %+v, %v", other, err)
	}
	// Concurrent registrations of one fact make one entry.
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			agent := []string{"alice", "bob", "carol", "dave"}[i%4]
			if _, err := p.RegisterFact(ctx, agent, "The deploy key expires on 1 May", Global(), Provenance{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	all, _ := p.Entries("dave", 0)
	n := 0
	for _, e := range all {
		if e.Text == "The deploy key expires on 1 May" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d entries for one fact", n)
	}
}

func TestSearchRanksAndRespectsScopes(t *testing.T) {
	p := team(t, Options{})
	share(t, p, "carol", "the frontend bundle mentions a cache", Team("frontend"))
	share(t, p, "dave", "the login page was slow", Global())
	share(t, p, "dave", "the Redis cache for sessions evicts keys after 30 minutes; raise maxmemory to fix cache misses", Global())
	// Many entries alice may not read, all about the query.
	for i := range 40 {
		share(t, p, "carol", fmt.Sprintf("frontend cache eviction note %d: cache misses on the sessions cache", i), Team("frontend"))
	}
	got, err := p.Search(context.Background(), "alice", "why do session cache misses happen?", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0].Text[:13] != "the Redis cac" {
		t.Fatalf("alice found %q, want the Redis entry first", texts(got))
	}
	for _, e := range got {
		if e.Scope == Team("frontend") {
			t.Fatalf("alice found a frontend entry: %+v", e)
		}
	}
	bob, _ := p.Search(context.Background(), "bob", "sessions cache misses", 3)
	if len(bob) != 3 {
		t.Fatalf("bob found %d entries, want 3", len(bob))
	}
}

func TestBroadcast(t *testing.T) {
	p := team(t, Options{SubscriberBuffer: 2})
	alice, _ := p.Subscribe("alice")
	carol, _ := p.Subscribe("carol")
	slow, _ := p.Subscribe("dave") // never reads until the end
	if _, err := p.Subscribe("mallory"); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("non-member subscribed: %v", err)
	}
	var got sync.Map
	var wg sync.WaitGroup
	for name, s := range map[string]*Subscription{"alice": alice, "carol": carol} {
		wg.Go(func() {
			var seen []Entry
			for e := range s.C() {
				seen = append(seen, e)
			}
			got.Store(name, seen)
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			scope := Global()
			if i%5 == 0 {
				scope = Team("backend")
			}
			share(t, p, "bob", fmt.Sprintf("update %d", i), scope)
			if i%10 == 0 {
				time.Sleep(time.Millisecond) // let the readers keep up
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a slow subscriber blocked the writer")
	}
	// The slow subscriber kept its buffer's worth and the rest was counted.
	if slow.Dropped() != 38 || len(slow.C()) != 2 { // dave reads the 40 global ones
		t.Fatalf("slow subscriber: %d dropped, %d buffered; want 38 and 2", slow.Dropped(), len(slow.C()))
	}
	first := <-slow.C()
	if first.Text != "update 1" { // update 0 is backend-only
		t.Fatalf("slow subscriber's first entry = %q", first.Text)
	}
	alice.Cancel()
	carol.Cancel()
	alice.Cancel() // again: no panic
	wg.Wait()
	for name, wantN := range map[string]int{"alice": 50, "carol": 40} {
		v, _ := got.Load(name)
		seen := v.([]Entry)
		dropped := map[string]uint64{"alice": alice.Dropped(), "carol": carol.Dropped()}[name]
		if uint64(len(seen))+dropped != uint64(wantN) {
			t.Fatalf("%s got %d + %d dropped, want %d", name, len(seen), dropped, wantN)
		}
		for i, e := range seen {
			if name == "carol" && e.Scope.Kind == ScopeTeam {
				t.Fatalf("carol received a backend entry %q", e.Text)
			}
			if i > 0 && e.Seq <= seen[i-1].Seq {
				t.Fatalf("%s received out of order: %d after %d", name, e.Seq, seen[i-1].Seq)
			}
		}
	}
	// A subscriber that missed entries catches up from the last Seq seen.
	rest, err := p.Entries("dave", first.Seq)
	if err != nil || len(rest) != 39 {
		t.Fatalf("catch-up: %d entries, %v", len(rest), err)
	}
}

func TestConcurrentUse(t *testing.T) {
	p := team(t, Options{SubscriberBuffer: 1000})
	ctx := context.Background()
	agents := []string{"alice", "bob", "carol", "dave"}
	subs := map[string]*Subscription{}
	for _, a := range agents {
		s, err := p.Subscribe(a)
		if err != nil {
			t.Fatal(err)
		}
		subs[a] = s
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			a := agents[g%4]
			for i := range 25 {
				scope := []Scope{Global(), Private(), Team([]string{"backend", "backend", "frontend", "backend"}[g%4])}[i%3]
				if a == "dave" && scope.Kind == ScopeTeam {
					scope = Global()
				}
				if _, err := p.Share(ctx, a, fmt.Sprintf("%s finding %d about topic %d", a, i, i%5), scope, Provenance{}); err != nil {
					t.Error(err)
					return
				}
				if _, err := p.Search(ctx, a, fmt.Sprintf("topic %d", i%5), 3); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		var seqs []int64
		for e := range subs[a].C() {
			seqs = append(seqs, e.Seq)
		}
		readable, _ := p.Entries(a, 0)
		var want []int64
		for _, e := range readable {
			want = append(want, e.Seq)
		}
		if !slices.Equal(seqs, want) {
			t.Fatalf("%s received %d entries, may read %d", a, len(seqs), len(want))
		}
	}
	all, _ := p.Entries("bob", 0)
	if n := len(p.entries); n != 200 {
		t.Fatalf("%d entries, want 200 (bob reads %d)", n, len(all))
	}
}

func TestContextBudget(t *testing.T) {
	c, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	p := team(t, Options{Counter: c})
	ctx := context.Background()
	for i := range 12 {
		share(t, p, "bob", fmt.Sprintf("finding %d: the payment service times out when the ledger is locked for %d seconds", i, i), Global())
	}
	share(t, p, "carol", "carol's frontend ledger view is cached", Team("frontend"))
	own := agentmem.New(agentmem.Options{Counter: c})
	_, _ = own.Add(ctx, &agentmem.SystemPromptStep{Content: "You debug payments."})
	_, _ = own.Add(ctx, &agentmem.TaskStep{Task: "Why does checkout fail?"})
	for i := range 10 {
		_, _ = own.Add(ctx, &agentmem.ScratchpadStep{Content: fmt.Sprintf("checked log file %d, nothing unusual", i)})
	}
	full, err := p.Context(ctx, "alice", "payment ledger timeout", own, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Shared) != DefaultSharedK || full.Messages[1].Role != agentmem.RoleSystem {
		t.Fatalf("unbounded: %d shared, second message %+v", len(full.Shared), full.Messages[1])
	}
	for _, e := range full.Shared {
		if e.Author == "carol" {
			t.Fatal("alice's context shows a frontend entry")
		}
	}
	fitted := 0
	for budget := 10; budget <= full.Tokens+10; budget += 9 {
		got, err := p.Context(ctx, "alice", "payment ledger timeout", own, budget)
		if errors.Is(err, agentmem.ErrBudgetTooSmall) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		fitted++
		if got.Tokens > budget || got.Tokens != agentmem.RequestTokens(c, got.Messages) {
			t.Fatalf("budget %d: %d tokens reported, %d counted", budget, got.Tokens, agentmem.RequestTokens(c, got.Messages))
		}
		if got.SharedTokens > int(DefaultSharedShare*float64(budget)) {
			t.Fatalf("budget %d: shared block %d over its share", budget, got.SharedTokens)
		}
		if got.Own.Messages[0].Text() != "You debug payments." {
			t.Fatal("system prompt lost")
		}
	}
	if fitted == 0 {
		t.Fatal("no budget fit")
	}
	// Without an own memory the context is the shared block alone.
	alone, err := p.Context(ctx, "dave", "", nil, 200)
	if err != nil || len(alone.Messages) != 1 || alone.Tokens > 200 || alone.Shared[0].Text[:10] != "finding 11" {
		t.Fatalf("alone = %+v, %v", alone, err)
	}
}

func TestPersistenceAndSyncSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentmem.db")
	clock := ptest.NewClock(start, time.Second)
	ctx := context.Background()
	db := ptest.OpenSQLite(t, path, clock.Now)
	opts := Options{Tenant: "acme", Name: "crew", Store: db.Store, Index: db.Index, Clock: clock.Now}
	p := open(t, opts)
	join(t, p, "alice", "backend")
	share(t, p, "alice", "the staging database password rotates weekly", Team("backend"))
	share(t, p, "alice", "the office wifi is flaky on Mondays", Global())

	// A second process on the same database: it sees the pool, and its
	// Sync brings in (and broadcasts) what the first appends later.
	db2 := ptest.OpenSQLite(t, path, clock.Now)
	q := open(t, Options{Tenant: "acme", Name: "crew", Store: db2.Store, Index: db2.Index, Clock: clock.Now})
	join(t, q, "bob", "backend")
	if got, _ := q.Entries("bob", 0); len(got) != 2 {
		t.Fatalf("second process reads %d entries", len(got))
	}
	sub, _ := q.Subscribe("bob")
	share(t, p, "alice", "deploys are frozen until Thursday", Global())
	if n, err := q.Sync(ctx); err != nil || n != 1 {
		t.Fatalf("Sync = %d, %v", n, err)
	}
	if e := <-sub.C(); e.Text != "deploys are frozen until Thursday" || e.Seq != 3 {
		t.Fatalf("broadcast after Sync = %+v", e)
	}
	_ = q.Close()
	db2.Close(t)

	_ = p.Close()
	db.Close(t)
	db = ptest.OpenSQLite(t, path, clock.Now)
	defer db.Close(t)
	opts.Store, opts.Index = db.Store, db.Index
	p = open(t, opts)
	join(t, p, "bob", "backend")
	got, err := p.Entries("bob", 0)
	if err != nil || len(got) != 3 || got[0].Author != "alice" || got[0].Scope != Team("backend") {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
	found, err := p.Search(ctx, "bob", "database password", 1)
	if err != nil || len(found) != 1 || found[0].Seq != 1 {
		t.Fatalf("search after reopen = %+v, %v", found, err)
	}
	// The log is a plain store session.
	s, err := db.Store.Get(ctx, "acme", "pool.crew")
	if err != nil || s.Tenant != "acme" || s.Retention != store.Persistent {
		t.Fatalf("pool session = %+v, %v", s, err)
	}
	if n, err := p.Reindex(ctx); err != nil || n != 3 {
		t.Fatalf("Reindex = %d, %v", n, err)
	}
}
