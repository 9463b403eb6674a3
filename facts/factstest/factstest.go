// Package factstest is the conformance suite every facts.Store backend
// runs, so that the in-memory, SQLite and PostgreSQL backends cannot drift
// apart. A backend's test calls Run once:
//
//	func TestConformance(t *testing.T) {
//		factstest.Run(t, factstest.Config{
//			New: func(t *testing.T) facts.Store { ... a new, empty store ... },
//			Share: func(t *testing.T, st facts.Store) facts.Store { ... a second handle on st's database ... },
//		})
//	}
//
// The suite drives each store through a facts.Memory with a manual clock,
// so decay and times are checked exactly. Subtests are grouped by
// behaviour (Facts, Reinforce, Decay, Supersede, Forget, Tenants,
// BadInput, Atomicity, Search, Concurrency, Close, Import, Once), so one
// group can be run alone with go test -run 'Conformance/Supersede'.
package factstest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
)

// Config describes the backend under test.
type Config struct {
	// New returns a new, empty store, isolated from the stores of other
	// subtests. The suite closes it when the subtest ends.
	New func(t *testing.T) facts.Store
	// Share, when set, returns a second store over the same database as
	// st, as another process would open it. The concurrency tests then
	// spread their writers over both, so that per-user serialization is
	// checked in the database and not only in one process. The suite
	// closes it.
	Share func(t *testing.T, st facts.Store) facts.Store
	// Writers is the number of concurrent writers; zero means 16.
	Writers int
	// Damage, when set, damages the stored fact tenant/id in st so that
	// it does not decode (its metadata not an object of strings), as a
	// row changed by hand or by a faulty disk would be. The suite then
	// checks what the store does with a damaged fact; a backend that
	// cannot hold one (the in-memory one) leaves it nil.
	Damage func(t *testing.T, st facts.Store, tenant, id string)
}

// Run runs the conformance suite against the backend cfg describes.
func Run(t *testing.T, cfg Config) {
	t.Helper()
	if cfg.New == nil {
		t.Fatal("factstest: Config.New is required")
	}
	if cfg.Writers <= 0 {
		cfg.Writers = 16
	}
	s := &suite{cfg: cfg}
	groups := []struct {
		name  string
		tests []test
	}{
		{"Facts", []test{{"RememberGetList", s.rememberGetList}, {"Metadata", s.metadata}, {"Embedding", s.embedding}, {"Replay", s.replay}}},
		{"Reinforce", []test{{"SameFact", s.reinforceSame}, {"DifferentFact", s.reinforceDifferent}}},
		{"Decay", []test{{"HalfLife", s.decayHalfLife}, {"ReinforceRestarts", s.decayReinforce}}},
		{"Supersede", []test{{"Chain", s.supersedeChain}, {"Conflict", s.supersedeConflict}, {"ToExisting", s.supersedeToExisting}}},
		{"Forget", []test{{"Audited", s.forgetAudited}, {"Missing", s.forgetMissing}, {"User", s.forgetUser}}},
		{"Tenants", []test{{"Isolation", s.tenantIsolation}, {"IDTaken", s.tenantIDTaken}}},
		{"BadInput", []test{{"Remember", s.badRemember}, {"Other", s.badOther}, {"Update", s.badUpdate}}},
		{"Atomicity", []test{{"Apply", s.atomicApply}, {"FnError", s.atomicFnError}}},
		{"Search", []test{{"Ranking", s.searchRanking}}},
		{"Time", []test{{"Validity", s.timeValidity}, {"SupersedeCloses", s.timeSupersedeCloses}, {"AsOf", s.timeAsOf}, {"Periods", s.timePeriods}}},
		{"Edit", []test{{"Fields", s.editFields}, {"Bad", s.editBad}, {"ForgetErases", s.editForgetErases}}},
		{"Filter", []test{{"Metadata", s.filterMetadata}}},
		{"Concurrency", []test{{"SameFact", s.concurrentSame}, {"Supersede", s.concurrentSupersede}, {"Users", s.concurrentUsers}}},
		{"Close", []test{{"Closed", s.closed}}},
		{"Damaged", []test{{"SkipAndReport", s.damaged}}},
		{"Import", []test{{"RoundTrip", s.importRoundTrip}, {"Conflict", s.importConflict}, {"Lister", s.lister}}},
		{"Once", []test{{"Extract", s.onceExtract}, {"Update", s.onceUpdate}, {"Concurrent", s.onceConcurrent}}},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, tc.fn)
			}
		})
	}
}

type test struct {
	name string
	fn   func(t *testing.T)
}

type suite struct{ cfg Config }

// Clock is a manual clock, safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// start is the suite's clock origin: not UTC and with nanoseconds, so a
// backend that keeps times other than in microseconds UTC shows.
var start = time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.FixedZone("CET", 3600))

const halfLife = 10 * 24 * time.Hour

// env is one subtest's store, clock and memory.
type env struct {
	t     *testing.T
	ctx   context.Context
	st    facts.Store
	clock *Clock
	mem   *facts.Memory
}

func (s *suite) env(t *testing.T) *env {
	t.Helper()
	st := s.cfg.New(t)
	t.Cleanup(func() { st.Close() })
	c := NewClock(start)
	return &env{t: t, ctx: context.Background(), st: st, clock: c, mem: s.memory(st, c)}
}

// memory returns a Memory over st with the suite's policy.
func (s *suite) memory(st facts.Store, c *Clock) *facts.Memory {
	return facts.New(st, facts.Options{
		Clock: c.Now, Decay: facts.Decay{HalfLife: halfLife, Floor: 0.2},
		DefaultConfidence: 0.6, Gain: 0.5, InjectThreshold: 0.3,
	})
}

func (e *env) remember(tenant, user, text string, conf float64) facts.Result {
	e.t.Helper()
	r, err := e.mem.Remember(e.ctx, facts.RememberRequest{Tenant: tenant, UserID: user, Text: text, Confidence: conf})
	if err != nil {
		e.t.Fatalf("Remember(%q): %v", text, err)
	}
	return r
}

func (e *env) list(tenant, user string, superseded bool) []facts.Fact {
	e.t.Helper()
	fs, err := e.mem.List(e.ctx, tenant, user, superseded)
	if err != nil {
		e.t.Fatalf("List: %v", err)
	}
	return fs
}

func (e *env) audit(tenant, user string) []facts.AuditEntry {
	e.t.Helper()
	a, err := e.mem.Audit(e.ctx, tenant, user)
	if err != nil {
		e.t.Fatalf("Audit: %v", err)
	}
	return a
}

// now is the clock's time as stored: microseconds, UTC.
func (e *env) now() time.Time { return e.clock.Now().UTC().Truncate(time.Microsecond) }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// sameFact fails t unless got and want hold the same data.
func sameFact(t *testing.T, got, want facts.Fact) {
	t.Helper()
	if got.ID != want.ID || got.Tenant != want.Tenant || got.UserID != want.UserID || got.Text != want.Text ||
		!near(got.Confidence, want.Confidence) || !got.CreatedAt.Equal(want.CreatedAt) || !got.ReinforcedAt.Equal(want.ReinforcedAt) ||
		got.Reinforcements != want.Reinforcements || got.Source != want.Source || got.SupersededBy != want.SupersededBy ||
		!got.SupersededAt.Equal(want.SupersededAt) || !got.ValidFrom.Equal(want.ValidFrom) || !got.ValidTo.Equal(want.ValidTo) || len(got.Metadata) != len(want.Metadata) || !slices.Equal(got.Embedding, want.Embedding) {
		t.Fatalf("fact differs:\n got %+v\nwant %+v", got, want)
	}
	for k, v := range want.Metadata {
		if got.Metadata[k] != v {
			t.Fatalf("metadata[%q] = %q, want %q", k, got.Metadata[k], v)
		}
	}
}

func (s *suite) rememberGetList(t *testing.T) {
	e := s.env(t)
	src := facts.Source{SessionID: "s1", StepSeq: 7, Agent: "coder"}
	r, err := e.mem.Remember(e.ctx, facts.RememberRequest{UserID: "alice", Text: "Prefers answers in French.", Confidence: 0.9, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != facts.OutcomeAdded || r.Fact.ID == "" {
		t.Fatalf("Remember = %+v, want added", r)
	}
	want := facts.Fact{ID: r.Fact.ID, UserID: "alice", Text: "Prefers answers in French.", Confidence: 0.9,
		CreatedAt: e.now(), ReinforcedAt: e.now(), ValidFrom: e.now(), Source: src}
	sameFact(t, r.Fact, want)
	got, err := e.mem.Get(e.ctx, "", r.Fact.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameFact(t, got, want)
	if got.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt in %v, want UTC", got.CreatedAt.Location())
	}
	e.clock.Advance(time.Second)
	r2 := e.remember("", "alice", "Has a dog named Rex.", 0)
	if !near(r2.Fact.Confidence, 0.6) {
		t.Errorf("default confidence %v, want 0.6", r2.Fact.Confidence)
	}
	fs := e.list("", "alice", false)
	if len(fs) != 2 || fs[0].ID != r.Fact.ID || fs[1].ID != r2.Fact.ID {
		t.Fatalf("List = %v, want the two facts oldest first", fs)
	}
	if fs := e.list("", "bob", true); len(fs) != 0 {
		t.Fatalf("List(bob) = %v, want none", fs)
	}
	a := e.audit("", "alice")
	if len(a) != 2 || a[0].Action != facts.ActionAdded || a[0].FactID != r.Fact.ID || a[0].By != "coder" || a[1].FactID != r2.Fact.ID || a[0].Seq >= a[1].Seq {
		t.Fatalf("audit = %+v", a)
	}
	if _, err := e.mem.Get(e.ctx, "", "no-such-id"); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("Get(missing) = %v, want ErrNotFound", err)
	}
}

func (s *suite) metadata(t *testing.T) {
	e := s.env(t)
	md := map[string]string{"topic": "food", "ünïcode": "✓ <&>"}
	r, err := e.mem.Remember(e.ctx, facts.RememberRequest{UserID: "u", Text: "Is vegetarian.", Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	md["topic"] = "changed after the call"
	got, err := e.mem.Get(e.ctx, "", r.Fact.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Metadata) != 2 || got.Metadata["topic"] != "food" || got.Metadata["ünïcode"] != "✓ <&>" {
		t.Fatalf("metadata = %v", got.Metadata)
	}
}

func (s *suite) embedding(t *testing.T) {
	e := s.env(t)
	vec := []float32{0.25, -1.5, 3e-7, 1e30}
	f := facts.Fact{ID: "fact-1", UserID: "u", Text: "Speaks Dutch.", Confidence: 0.5, CreatedAt: e.now(), ReinforcedAt: e.now(),
		ValidFrom: e.now().Add(-time.Hour), ValidTo: e.now().Add(time.Hour), Embedding: vec}
	err := e.st.Update(e.ctx, "", "u", func(cur []facts.Fact) (facts.Changes, error) {
		return facts.Changes{Put: []facts.Fact{f}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.st.Get(e.ctx, "", "fact-1")
	if err != nil {
		t.Fatal(err)
	}
	sameFact(t, got, f)
}

func (s *suite) replay(t *testing.T) {
	e := s.env(t)
	src := facts.Source{SessionID: "s", StepSeq: 3}
	req := facts.RememberRequest{UserID: "u", Text: "Lives in Lyon.", Source: src}
	r1, err := e.mem.Remember(e.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := e.mem.Remember(e.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Outcome != facts.OutcomeIgnored || r2.Fact.ID != r1.Fact.ID || r2.Fact.Reinforcements != 0 {
		t.Fatalf("replay of the same source = %+v, want ignored", r2)
	}
	req.Source.StepSeq = 4
	if r3, err := e.mem.Remember(e.ctx, req); err != nil || r3.Outcome != facts.OutcomeReinforced {
		t.Fatalf("same fact from another step = %+v, %v; want reinforced", r3, err)
	}
}

func (s *suite) reinforceSame(t *testing.T) {
	e := s.env(t)
	r1 := e.remember("", "u", "Likes green tea.", 0.6)
	e.clock.Advance(time.Hour)
	r2 := e.remember("", "u", "  likes GREEN tea ", 0.5)
	if r2.Outcome != facts.OutcomeReinforced || r2.Fact.ID != r1.Fact.ID {
		t.Fatalf("second Remember = %+v, want reinforced %s", r2, r1.Fact.ID)
	}
	// One hour of a ten-day half-life: effective = 0.2 + 0.4·2^(-1/240).
	eff := 0.2 + 0.4*math.Exp2(-1.0/240)
	want := eff + (1-eff)*0.5
	got, err := e.mem.Get(e.ctx, "", r1.Fact.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !near(got.Confidence, want) || got.Reinforcements != 1 || !got.ReinforcedAt.Equal(e.now()) || !got.CreatedAt.Equal(r1.Fact.CreatedAt) || got.Text != "Likes green tea." {
		t.Fatalf("reinforced fact = %+v, want confidence %v, 1 reinforcement at %v", got, want, e.now())
	}
	// A stronger observation counts for its own confidence.
	r3 := e.remember("", "u", "Likes green tea", 0.95)
	if want := 0.95 + 0.05*0.5; !near(r3.Fact.Confidence, want) {
		t.Fatalf("confidence after a 0.95 observation = %v, want %v", r3.Fact.Confidence, want)
	}
	if n := len(e.list("", "u", true)); n != 1 {
		t.Fatalf("%d facts, want 1", n)
	}
	if a := e.audit("", "u"); len(a) != 1 {
		t.Fatalf("audit = %+v, want only the add (reinforcements are counted, not audited)", a)
	}
}

func (s *suite) reinforceDifferent(t *testing.T) {
	e := s.env(t)
	e.remember("", "u", "Lives in Berlin.", 0)
	if r := e.remember("", "u", "Works in Berlin as a nurse.", 0); r.Outcome != facts.OutcomeAdded {
		t.Fatalf("a different fact = %+v, want added", r)
	}
	if n := len(e.list("", "u", false)); n != 2 {
		t.Fatalf("%d facts, want 2", n)
	}
}

func (s *suite) decayHalfLife(t *testing.T) {
	e := s.env(t)
	r := e.remember("", "u", "Plays the cello.", 0.8)
	f, err := e.mem.Get(e.ctx, "", r.Fact.ID)
	if err != nil {
		t.Fatal(err)
	}
	check := func(want float64) {
		t.Helper()
		if got := e.mem.Confidence(f); !near(got, want) {
			t.Fatalf("confidence after %v = %v, want %v", e.clock.Now().Sub(start), got, want)
		}
	}
	check(0.8)
	e.clock.Advance(halfLife)
	check(0.2 + 0.6/2) // exactly one half-life: half of what is above the floor
	e.clock.Advance(halfLife)
	check(0.2 + 0.6/4)
	e.clock.Advance(100 * halfLife)
	check(0.2 + 0.6*math.Exp2(-102)) // the floor, for all practical purposes
	// Below the threshold, a fact is searchable but not injected.
	hits, err := e.mem.Search(e.ctx, facts.SearchRequest{UserID: "u", Query: "cello"})
	if err != nil || len(hits) != 1 {
		t.Fatalf("Search = %v, %v; want the decayed fact", hits, err)
	}
	hits, err = e.mem.Search(e.ctx, facts.SearchRequest{UserID: "u", Query: "cello", MinConfidence: e.mem.Options().InjectThreshold})
	if err != nil || len(hits) != 0 {
		t.Fatalf("Search above the inject threshold = %v, %v; want none", hits, err)
	}
}

func (s *suite) decayReinforce(t *testing.T) {
	e := s.env(t)
	r := e.remember("", "u", "Runs marathons.", 0.8)
	e.clock.Advance(2 * halfLife)
	r2 := e.remember("", "u", "Runs marathons.", 0.1)
	eff := 0.2 + 0.6/4
	if want := eff + (1-eff)*0.5; !near(r2.Fact.Confidence, want) || r2.Fact.ID != r.Fact.ID {
		t.Fatalf("reinforced after two half-lives = %+v, want confidence %v", r2.Fact, want)
	}
	e.clock.Advance(halfLife)
	if got, want := e.mem.Confidence(r2.Fact), 0.2+(r2.Fact.Confidence-0.2)/2; !near(got, want) {
		t.Fatalf("one half-life after the reinforcement: %v, want %v", got, want)
	}
}

func (s *suite) supersedeChain(t *testing.T) {
	e := s.env(t)
	a := e.remember("", "u", "Lives in Berlin.", 0.9)
	e.clock.Advance(time.Minute)
	rb, err := e.mem.Supersede(e.ctx, facts.SupersedeRequest{ID: a.Fact.ID, Text: "Lives in Paris.", By: "user", Reason: "moved"})
	if err != nil {
		t.Fatal(err)
	}
	if rb.Outcome != facts.OutcomeSuperseded || rb.Previous == nil || rb.Previous.SupersededBy != rb.Fact.ID || !rb.Previous.SupersededAt.Equal(e.now()) ||
		!rb.Previous.ValidTo.Equal(rb.Fact.ValidFrom) || !rb.Fact.ValidFrom.Equal(e.now()) {
		t.Fatalf("Supersede = %+v, want the old fact closed when the new one began (now)", rb)
	}
	e.clock.Advance(time.Minute)
	rc, err := e.mem.Supersede(e.ctx, facts.SupersedeRequest{ID: rb.Fact.ID, Text: "Lives in Tokyo.", Source: facts.Source{Agent: "planner"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a.Fact.ID, rb.Fact.ID, rc.Fact.ID} {
		h, err := e.mem.History(e.ctx, "", id)
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, f := range h {
			texts = append(texts, f.Text)
		}
		if strings.Join(texts, "|") != "Lives in Berlin.|Lives in Paris.|Lives in Tokyo." {
			t.Fatalf("History(%s) = %q", id, texts)
		}
	}
	valid := e.list("", "u", false)
	if len(valid) != 1 || valid[0].ID != rc.Fact.ID {
		t.Fatalf("valid facts = %v, want only Tokyo", valid)
	}
	all := e.list("", "u", true)
	if len(all) != 3 || all[0].SupersededBy != rb.Fact.ID || all[1].SupersededBy != rc.Fact.ID || !all[2].Valid() {
		t.Fatalf("all facts = %+v", all)
	}
	au := e.audit("", "u")
	var sup []facts.AuditEntry
	for _, x := range au {
		if x.Action == facts.ActionSuperseded {
			sup = append(sup, x)
		}
	}
	if len(au) != 5 || len(sup) != 2 || sup[0].FactID != a.Fact.ID || sup[0].Successor != rb.Fact.ID || sup[0].By != "user" || sup[0].Reason != "moved" || sup[1].By != "planner" {
		t.Fatalf("audit = %+v", au)
	}
	hits, err := e.mem.Search(e.ctx, facts.SearchRequest{UserID: "u", Query: "where does the user live"})
	if err != nil || len(hits) != 1 || hits[0].Fact.ID != rc.Fact.ID {
		t.Fatalf("Search = %+v, %v; want only the valid fact", hits, err)
	}
}

func (s *suite) supersedeConflict(t *testing.T) {
	e := s.env(t)
	a := e.remember("", "u", "Is 30 years old.", 0)
	if _, err := e.mem.Supersede(e.ctx, facts.SupersedeRequest{ID: a.Fact.ID, Text: "Is 31 years old."}); err != nil {
		t.Fatal(err)
	}
	_, err := e.mem.Supersede(e.ctx, facts.SupersedeRequest{ID: a.Fact.ID, Text: "Is 32 years old."})
	if !errors.Is(err, agentmem.ErrConflict) {
		t.Fatalf("superseding a superseded fact: %v, want ErrConflict", err)
	}
	if _, err := e.mem.Supersede(e.ctx, facts.SupersedeRequest{ID: "missing", Text: "x y z"}); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("superseding a missing fact: %v, want ErrNotFound", err)
	}
	if n := len(e.list("", "u", true)); n != 2 {
		t.Fatalf("%d facts, want 2", n)
	}
}

func (s *suite) supersedeToExisting(t *testing.T) {
	e := s.env(t)
	a := e.remember("", "u", "Drives a Volvo.", 0)
	b := e.remember("", "u", "Drives a Tesla.", 0)
	r, err := e.mem.Supersede(e.ctx, facts.SupersedeRequest{ID: a.Fact.ID, Text: "drives a tesla"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Fact.ID != b.Fact.ID || r.Fact.Reinforcements != 1 || r.Previous.SupersededBy != b.Fact.ID {
		t.Fatalf("Supersede onto an existing fact = %+v, want %s reinforced", r, b.Fact.ID)
	}
	if n := len(e.list("", "u", true)); n != 2 {
		t.Fatalf("%d facts, want 2: no duplicate", n)
	}
}

func (s *suite) forgetAudited(t *testing.T) {
	e := s.env(t)
	a := e.remember("", "u", "Lives in Berlin.", 0)
	b, err := e.mem.Supersede(e.ctx, facts.SupersedeRequest{ID: a.Fact.ID, Text: "Lives in Paris."})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	if err := e.mem.Forget(e.ctx, "", b.Fact.ID, "user:alice", "asked to forget where I live"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.mem.Get(e.ctx, "", b.Fact.ID); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("Get(forgotten) = %v, want ErrNotFound", err)
	}
	all := e.list("", "u", true)
	if len(all) != 1 || all[0].ID != a.Fact.ID || all[0].SupersededBy != b.Fact.ID {
		t.Fatalf("facts after forget = %+v, want the old fact, still superseded", all)
	}
	h, err := e.mem.History(e.ctx, "", a.Fact.ID)
	if err != nil || len(h) != 1 {
		t.Fatalf("History = %v, %v; want the old fact alone", h, err)
	}
	au := e.audit("", "u")
	last := au[len(au)-1]
	sum := sha256.Sum256([]byte("Lives in Paris."))
	if last.Action != facts.ActionForgotten || last.FactID != b.Fact.ID || last.By != "user:alice" || last.Reason != "asked to forget where I live" ||
		!last.At.Equal(e.now()) || last.Digest != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("forget audit entry = %+v", last)
	}
	for _, x := range au {
		if strings.Contains(fmt.Sprintf("%+v", x), "Paris") {
			t.Fatalf("the audit log keeps the forgotten text: %+v", x)
		}
	}
	// The superseded old fact can be forgotten too.
	if err := e.mem.Forget(e.ctx, "", a.Fact.ID, "user:alice", "all of it"); err != nil {
		t.Fatal(err)
	}
	if n := len(e.list("", "u", true)); n != 0 {
		t.Fatalf("%d facts left, want 0", n)
	}
}

func (s *suite) forgetMissing(t *testing.T) {
	e := s.env(t)
	a := e.remember("", "u", "Owns a bike.", 0)
	if err := e.mem.Forget(e.ctx, "", "missing", "op", "why"); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("Forget(missing) = %v, want ErrNotFound", err)
	}
	for _, c := range []struct{ by, reason string }{{"", "why"}, {"op", ""}, {"op", "   "}} {
		if err := e.mem.Forget(e.ctx, "", a.Fact.ID, c.by, c.reason); !errors.Is(err, agentmem.ErrInvalid) {
			t.Fatalf("Forget(by %q, reason %q) = %v, want ErrInvalid", c.by, c.reason, err)
		}
	}
	if n := len(e.list("", "u", true)); n != 1 || len(e.audit("", "u")) != 1 {
		t.Fatal("a refused forget wrote something")
	}
}

// forgetUser: ForgetUser forgets every fact of one user in one tenant,
// superseded ones too, audits each without its text, and leaves other
// users and tenants alone; a second call forgets nothing.
func (s *suite) forgetUser(t *testing.T) {
	e := s.env(t)
	a := e.remember("acme", "alice", "Lives in Berlin.", 0)
	if _, err := e.mem.Supersede(e.ctx, facts.SupersedeRequest{Tenant: "acme", ID: a.Fact.ID, Text: "Lives in Paris."}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.mem.Edit(e.ctx, facts.EditRequest{Tenant: "acme", ID: e.remember("acme", "alice", "Has a cat.", 0).Fact.ID, Text: ptr("Has a cat named Tom.")}); err != nil {
		t.Fatal(err)
	}
	bob := e.remember("acme", "bob", "Lives in Paris.", 0)
	other := e.remember("globex", "alice", "Lives in Paris.", 0)
	if _, err := e.mem.ForgetUser(e.ctx, "acme", "alice", "", "why"); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("ForgetUser without by = %v, want ErrInvalid", err)
	}
	n, err := e.mem.ForgetUser(e.ctx, "acme", "alice", "op", "erasure request")
	if err != nil || n != 3 {
		t.Fatalf("ForgetUser = %d, %v; want 3", n, err)
	}
	if left := e.list("acme", "alice", true); len(left) != 0 {
		t.Fatalf("facts left: %+v", left)
	}
	au := e.audit("acme", "alice")
	forgotten := 0
	for _, x := range au {
		if x.Before != nil || x.After != nil {
			t.Fatalf("an entry of a forgotten fact keeps what it said: %+v", x)
		}
		if s := fmt.Sprintf("%+v", x); strings.Contains(s, "Paris") || strings.Contains(s, "Berlin") || strings.Contains(s, "cat") {
			t.Fatalf("the audit log keeps the forgotten text: %s", s)
		}
		if x.Action == facts.ActionForgotten {
			forgotten++
			if x.By != "op" || x.Reason != "erasure request" || !strings.HasPrefix(x.Digest, "sha256:") {
				t.Fatalf("forget entry = %+v", x)
			}
		}
	}
	if forgotten != 3 {
		t.Fatalf("%d forget entries, want 3: %+v", forgotten, au)
	}
	for _, f := range []facts.Fact{bob.Fact, other.Fact} {
		if g, err := e.mem.Get(e.ctx, f.Tenant, f.ID); err != nil || g.Text != "Lives in Paris." {
			t.Fatalf("another user's fact = %+v, %v; want it kept", g, err)
		}
	}
	if n, err := e.mem.ForgetUser(e.ctx, "acme", "alice", "op", "again"); err != nil || n != 0 {
		t.Fatalf("ForgetUser again = %d, %v; want 0", n, err)
	}
	if len(e.audit("acme", "alice")) != len(au) {
		t.Fatal("a repeated ForgetUser wrote to the audit log")
	}
}

func (s *suite) tenantIsolation(t *testing.T) {
	e := s.env(t)
	a := e.remember("acme", "alice", "Is allergic to peanuts.", 0)
	b := e.remember("globex", "alice", "Is allergic to peanuts.", 0)
	if b.Outcome != facts.OutcomeAdded || a.Fact.ID == b.Fact.ID {
		t.Fatalf("the same fact in another tenant = %+v, want a separate add", b)
	}
	if _, err := e.mem.Get(e.ctx, "globex", a.Fact.ID); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("Get across tenants = %v, want ErrNotFound", err)
	}
	if _, err := e.mem.Get(e.ctx, "", a.Fact.ID); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("Get in the default tenant = %v, want ErrNotFound", err)
	}
	if err := e.mem.Forget(e.ctx, "globex", a.Fact.ID, "op", "x"); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("Forget across tenants = %v, want ErrNotFound", err)
	}
	if _, err := e.mem.Supersede(e.ctx, facts.SupersedeRequest{Tenant: "globex", ID: a.Fact.ID, Text: "No allergies."}); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("Supersede across tenants = %v, want ErrNotFound", err)
	}
	if _, err := e.mem.Apply(e.ctx, "globex", "alice", facts.Source{}, []facts.Decision{{Op: facts.OpReinforce, FactID: a.Fact.ID}}); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("Apply across tenants = %v, want ErrNotFound", err)
	}
	e.remember("globex", "alice", "Prefers tea.", 0)
	if fs := e.list("acme", "alice", true); len(fs) != 1 || fs[0].ID != a.Fact.ID || fs[0].Reinforcements != 0 {
		t.Fatalf("acme's facts = %+v", fs)
	}
	hits, err := e.mem.Search(e.ctx, facts.SearchRequest{Tenant: "acme", UserID: "alice", Query: "tea peanuts", K: -1})
	if err != nil || len(hits) != 1 || hits[0].Fact.Tenant != "acme" {
		t.Fatalf("Search in acme = %+v, %v", hits, err)
	}
	if a := e.audit("acme", "alice"); len(a) != 1 || a[0].Tenant != "acme" {
		t.Fatalf("acme's audit = %+v", a)
	}
	if n := len(e.audit("globex", "alice")); n != 2 {
		t.Fatalf("globex's audit has %d entries, want 2", n)
	}
}

func (s *suite) tenantIDTaken(t *testing.T) {
	e := s.env(t)
	a := e.remember("", "alice", "Likes jazz.", 0)
	f := a.Fact
	f.UserID = "mallory"
	err := e.st.Update(e.ctx, "", "mallory", func([]facts.Fact) (facts.Changes, error) {
		return facts.Changes{Put: []facts.Fact{f}}, nil
	})
	if !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("putting another user's fact ID: %v, want ErrInvalid", err)
	}
	got, err := e.mem.Get(e.ctx, "", a.Fact.ID)
	if err != nil || got.UserID != "alice" {
		t.Fatalf("Get = %+v, %v; want alice's fact unchanged", got, err)
	}
	f.Tenant = "other"
	if err := e.st.Update(e.ctx, "other", "mallory", func([]facts.Fact) (facts.Changes, error) {
		return facts.Changes{Put: []facts.Fact{f}}, nil
	}); err != nil {
		t.Fatalf("the same ID in another tenant: %v", err)
	}
}

func (s *suite) badRemember(t *testing.T) {
	e := s.env(t)
	long := strings.Repeat("x", facts.MaxTextBytes+1)
	bad := []facts.RememberRequest{
		{UserID: "", Text: "fine"},
		{UserID: "   ", Text: "fine"},
		{UserID: "u", Text: ""},
		{UserID: "u", Text: " \n\t "},
		{UserID: "u", Text: long},
		{UserID: "u", Text: "bad \xff utf-8"},
		{UserID: "u", Text: "nul \x00 byte"},
		{UserID: "u\x00", Text: "fine"},
		{Tenant: strings.Repeat("t", facts.MaxFieldBytes+1), UserID: "u", Text: "fine"},
		{UserID: "u", Text: "fine", Confidence: 1.5},
		{UserID: "u", Text: "fine", Confidence: -0.1},
		{UserID: "u", Text: "fine", Confidence: math.NaN()},
		{UserID: "u", Text: "fine", Source: facts.Source{StepSeq: -1}},
		{UserID: "u", Text: "fine", Source: facts.Source{Agent: "\xfe"}},
		{UserID: "u", Text: "fine", Metadata: map[string]string{"": "v"}},
		{UserID: "u", Text: "fine", Metadata: map[string]string{"k": "\x00"}},
	}
	for i, req := range bad {
		_, err := e.mem.Remember(e.ctx, req)
		var ie *agentmem.InvalidError
		if !errors.Is(err, agentmem.ErrInvalid) || !errors.As(err, &ie) {
			t.Errorf("bad[%d] %+.60v: %v, want an *agentmem.InvalidError", i, req, err)
		}
	}
	for _, u := range []string{"u", ""} {
		if fs, err := e.st.Facts(e.ctx, "", u); err != nil || len(fs) != 0 {
			t.Fatalf("bad input wrote facts: %v, %v", fs, err)
		}
		if a, err := e.st.Audit(e.ctx, "", u); err != nil || len(a) != 0 {
			t.Fatalf("bad input wrote audit entries: %v, %v", a, err)
		}
	}
}

func (s *suite) badOther(t *testing.T) {
	e := s.env(t)
	a := e.remember("", "u", "Knows Go.", 0)
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", what, err)
		}
	}
	_, err := e.mem.Supersede(e.ctx, facts.SupersedeRequest{ID: a.Fact.ID, Text: ""})
	check("Supersede with no text", err)
	_, err = e.mem.Supersede(e.ctx, facts.SupersedeRequest{ID: "", Text: "x"})
	check("Supersede with no ID", err)
	_, err = e.mem.Apply(e.ctx, "", "u", facts.Source{}, []facts.Decision{{Op: facts.OpAdd, Text: "Knows Rust."}, {Op: "delete", FactID: a.Fact.ID}})
	check("Apply with an unknown action", err)
	_, err = e.mem.Apply(e.ctx, "", "u", facts.Source{}, []facts.Decision{{Op: facts.OpAdd, Text: "Knows Rust.", FactID: a.Fact.ID}})
	check("Apply add with an ID", err)
	_, err = e.mem.Apply(e.ctx, "", "u", facts.Source{}, []facts.Decision{{Op: facts.OpSupersede, FactID: a.Fact.ID}})
	check("Apply supersede without text", err)
	_, err = e.mem.Search(e.ctx, facts.SearchRequest{UserID: ""})
	check("Search without a user", err)
	fs := e.list("", "u", true)
	if len(fs) != 1 || fs[0].Reinforcements != 0 || !fs[0].Valid() || len(e.audit("", "u")) != 1 {
		t.Fatalf("bad input changed the facts: %+v", fs)
	}
}

func (s *suite) badUpdate(t *testing.T) {
	e := s.env(t)
	good := facts.Fact{ID: "good", UserID: "u", Text: "Fine.", Confidence: 0.5, CreatedAt: e.now(), ReinforcedAt: e.now(), ValidFrom: e.now()}
	bads := map[string]func(f facts.Fact) facts.Fact{
		"no ID":            func(f facts.Fact) facts.Fact { f.ID = ""; return f },
		"other user":       func(f facts.Fact) facts.Fact { f.UserID = "v"; return f },
		"other tenant":     func(f facts.Fact) facts.Fact { f.Tenant = "t"; return f },
		"confidence":       func(f facts.Fact) facts.Fact { f.Confidence = 2; return f },
		"no time":          func(f facts.Fact) facts.Fact { f.CreatedAt = time.Time{}; return f },
		"half superseded":  func(f facts.Fact) facts.Fact { f.SupersededBy = "x"; return f },
		"self superseding": func(f facts.Fact) facts.Fact { f.SupersededBy, f.SupersededAt = f.ID, e.now(); return f },
		"NaN embedding":    func(f facts.Fact) facts.Fact { f.Embedding = []float32{float32(math.NaN())}; return f },
		"no valid_from":    func(f facts.Fact) facts.Fact { f.ValidFrom = time.Time{}; return f },
		"valid_to before":  func(f facts.Fact) facts.Fact { f.ValidTo = f.ValidFrom.Add(-time.Second); return f },
	}
	for name, mutate := range bads {
		base := good
		base.ID = "bad"
		bad := mutate(base)
		err := e.st.Update(e.ctx, "", "u", func([]facts.Fact) (facts.Changes, error) {
			return facts.Changes{Put: []facts.Fact{good, bad}}, nil
		})
		if !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("Update with a bad fact (%s): %v, want ErrInvalid", name, err)
		}
	}
	err := e.st.Update(e.ctx, "", "u", func([]facts.Fact) (facts.Changes, error) {
		return facts.Changes{Put: []facts.Fact{good}, Delete: []string{"not-mine"}}, nil
	})
	if !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("Update deleting an unknown fact: %v, want ErrInvalid", err)
	}
	err = e.st.Update(e.ctx, "", "u", func([]facts.Fact) (facts.Changes, error) {
		return facts.Changes{Put: []facts.Fact{good}, Audit: []facts.AuditEntry{{UserID: "u", FactID: "good", Action: "erased", At: e.now()}}}, nil
	})
	if !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("Update with a bad audit entry: %v, want ErrInvalid", err)
	}
	if fs, err := e.st.Facts(e.ctx, "", "u"); err != nil || len(fs) != 0 {
		t.Fatalf("refused updates wrote %v, %v", fs, err)
	}
	if a, err := e.st.Audit(e.ctx, "", "u"); err != nil || len(a) != 0 {
		t.Fatalf("refused updates wrote audit entries %v, %v", a, err)
	}
}

func (s *suite) atomicApply(t *testing.T) {
	e := s.env(t)
	a := e.remember("", "u", "Has two cats.", 0)
	_, err := e.mem.Apply(e.ctx, "", "u", facts.Source{}, []facts.Decision{
		{Op: facts.OpAdd, Text: "Works nights."},
		{Op: facts.OpSupersede, FactID: a.Fact.ID, Text: "Has three cats."},
		{Op: facts.OpReinforce, FactID: "not-a-fact"},
	})
	if !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("Apply naming a missing fact: %v, want ErrNotFound", err)
	}
	fs := e.list("", "u", true)
	if len(fs) != 1 || !fs[0].Valid() || len(e.audit("", "u")) != 1 {
		t.Fatalf("a failed Apply wrote part of its decisions: %+v", fs)
	}
	rs, err := e.mem.Apply(e.ctx, "", "u", facts.Source{SessionID: "s9", Agent: "x"}, []facts.Decision{
		{Op: facts.OpAdd, Text: "Works nights."},
		{Op: facts.OpAdd, Text: "works nights"},
		{Op: facts.OpSupersede, FactID: a.Fact.ID, Text: "Has three cats."},
		{Op: facts.OpIgnore},
	})
	if err != nil {
		t.Fatal(err)
	}
	outs := []facts.Outcome{rs[0].Outcome, rs[1].Outcome, rs[2].Outcome, rs[3].Outcome}
	if !slices.Equal(outs, []facts.Outcome{facts.OutcomeAdded, facts.OutcomeIgnored, facts.OutcomeSuperseded, facts.OutcomeIgnored}) {
		t.Fatalf("outcomes = %v", outs)
	}
	if fs := e.list("", "u", false); len(fs) != 2 || fs[0].Source.SessionID != "s9" {
		t.Fatalf("valid facts = %+v", fs)
	}
}

func (s *suite) atomicFnError(t *testing.T) {
	e := s.env(t)
	boom := errors.New("boom")
	err := e.st.Update(e.ctx, "", "u", func([]facts.Fact) (facts.Changes, error) {
		return facts.Changes{Put: []facts.Fact{{ID: "x", UserID: "u", Text: "t", Confidence: 1, CreatedAt: e.now(), ReinforcedAt: e.now(), ValidFrom: e.now()}}}, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want fn's error", err)
	}
	if fs, _ := e.st.Facts(e.ctx, "", "u"); len(fs) != 0 {
		t.Fatalf("fn's error still wrote %v", fs)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if _, err := e.mem.Remember(ctx, facts.RememberRequest{UserID: "u", Text: "Cancelled."}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Remember with a cancelled context: %v", err)
	}
}

func (s *suite) searchRanking(t *testing.T) {
	e := s.env(t)
	old := e.remember("", "u", "Enjoys hiking in the mountains.", 0.9)
	e.clock.Advance(3 * halfLife)
	fresh := e.remember("", "u", "Enjoys hiking with friends.", 0.9)
	e.remember("", "u", "Is a vegetarian.", 0.95)
	hits, err := e.mem.Search(e.ctx, facts.SearchRequest{UserID: "u", Query: "hikes"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].Fact.ID != fresh.Fact.ID || hits[1].Fact.ID != old.Fact.ID {
		t.Fatalf("Search(hikes) = %+v, want the fresh hiking fact, then the decayed one", hits)
	}
	for _, h := range hits {
		if !near(h.Score, h.Relevance*h.Confidence) || h.Relevance <= 0 || h.Relevance > 1 {
			t.Fatalf("hit %+v: score is not relevance × confidence", h)
		}
	}
	if !near(hits[1].Confidence, 0.2+0.7/8) {
		t.Fatalf("decayed confidence %v, want %v", hits[1].Confidence, 0.2+0.7/8)
	}
	hits, err = e.mem.Search(e.ctx, facts.SearchRequest{UserID: "u", Query: "mountains"})
	if err != nil || len(hits) != 1 || hits[0].Fact.ID != old.Fact.ID || hits[0].Relevance != 1 {
		t.Fatalf("Search(mountains) = %+v, %v", hits, err)
	}
	hits, err = e.mem.Search(e.ctx, facts.SearchRequest{UserID: "u", Query: "mountains", Fill: true, K: 2})
	if err != nil || len(hits) != 2 || hits[0].Fact.ID != old.Fact.ID || hits[1].Fact.Text != "Is a vegetarian." {
		t.Fatalf("Search(mountains, Fill) = %+v, %v; want the match, then the most confident other", hits, err)
	}
	hits, err = e.mem.Search(e.ctx, facts.SearchRequest{UserID: "u", K: 1})
	if err != nil || len(hits) != 1 || hits[0].Fact.Text != "Is a vegetarian." {
		t.Fatalf("Search with no query = %+v, %v; want the most confident fact", hits, err)
	}
}

// handles returns the store of e and, when the backend can, a second
// handle on the same database.
func (s *suite) handles(t *testing.T, e *env) []*facts.Memory {
	mems := []*facts.Memory{e.mem}
	if s.cfg.Share != nil {
		st2 := s.cfg.Share(t, e.st)
		t.Cleanup(func() { st2.Close() })
		mems = append(mems, s.memory(st2, e.clock))
	}
	return mems
}

// parallel runs fn(i, mem) for i in [0, n) in n goroutines, spread over
// mems, and fails t on any error.
func parallel(t *testing.T, n int, mems []*facts.Memory, fn func(i int, m *facts.Memory) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	gate := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			if err := fn(i, mems[i%len(mems)]); err != nil {
				errs <- err
			}
		}()
	}
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func (s *suite) concurrentSame(t *testing.T) {
	e := s.env(t)
	mems := s.handles(t, e)
	n := s.cfg.Writers
	outcomes := make([]facts.Outcome, n)
	parallel(t, n, mems, func(i int, m *facts.Memory) error {
		r, err := m.Remember(e.ctx, facts.RememberRequest{UserID: "alice", Text: "Prefers dark mode.", Source: facts.Source{Agent: fmt.Sprint("worker-", i)}})
		outcomes[i] = r.Outcome
		return err
	})
	fs := e.list("", "alice", true)
	if len(fs) != 1 {
		t.Fatalf("%d concurrent remembers of one fact made %d facts, want 1: %+v", n, len(fs), fs)
	}
	if fs[0].Reinforcements != n-1 {
		t.Fatalf("reinforcements = %d, want %d", fs[0].Reinforcements, n-1)
	}
	if added := slices.DeleteFunc(outcomes, func(o facts.Outcome) bool { return o != facts.OutcomeAdded }); len(added) != 1 {
		t.Fatalf("%d adds reported, want 1", len(added))
	}
	if a := e.audit("", "alice"); len(a) != 1 {
		t.Fatalf("audit = %+v, want one add", a)
	}
}

func (s *suite) concurrentSupersede(t *testing.T) {
	e := s.env(t)
	mems := s.handles(t, e)
	a := e.remember("", "alice", "Lives in Berlin.", 0.9)
	n := s.cfg.Writers
	// Every extraction saw "Lives in Berlin" and proposes the same move,
	// plus a fact of its own.
	parallel(t, n, mems, func(i int, m *facts.Memory) error {
		_, err := m.Apply(e.ctx, "", "alice", facts.Source{Agent: fmt.Sprint("x", i)}, []facts.Decision{
			{Op: facts.OpSupersede, FactID: a.Fact.ID, Text: "Lives in Paris."},
			{Op: facts.OpAdd, Text: fmt.Sprintf("Visited city number %d.", i)},
		})
		return err
	})
	valid := e.list("", "alice", false)
	paris := slices.IndexFunc(valid, func(f facts.Fact) bool { return f.Text == "Lives in Paris." })
	if len(valid) != n+1 || paris < 0 || valid[paris].Reinforcements != n-1 {
		t.Fatalf("after %d concurrent supersessions: %d valid facts (want %d), Paris at %d: %+v", n, len(valid), n+1, paris, valid)
	}
	old, err := e.mem.Get(e.ctx, "", a.Fact.ID)
	if err != nil || old.SupersededBy != valid[paris].ID {
		t.Fatalf("old fact = %+v, %v", old, err)
	}
	var sup int
	for _, x := range e.audit("", "alice") {
		if x.Action == facts.ActionSuperseded {
			sup++
		}
	}
	if sup != 1 {
		t.Fatalf("%d supersessions audited, want 1", sup)
	}
}

func (s *suite) concurrentUsers(t *testing.T) {
	e := s.env(t)
	mems := s.handles(t, e)
	n := s.cfg.Writers
	parallel(t, n, mems, func(i int, m *facts.Memory) error {
		user := fmt.Sprint("user-", i%4)
		_, err := m.Remember(e.ctx, facts.RememberRequest{UserID: user, Text: fmt.Sprintf("Has lucky number %d.", i/4)})
		return err
	})
	for u := range 4 {
		if fs := e.list("", fmt.Sprint("user-", u), true); len(fs) != n/4+min(1, max(0, n%4-u)) {
			t.Fatalf("user-%d has %d facts, want %d", u, len(fs), n/4)
		}
	}
}

func (s *suite) closed(t *testing.T) {
	st := s.cfg.New(t)
	m := s.memory(st, NewClock(start))
	ctx := context.Background()
	r, err := m.Remember(ctx, facts.RememberRequest{UserID: "u", Text: "Before close."})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Remember(ctx, facts.RememberRequest{UserID: "u", Text: "After close."}); !errors.Is(err, facts.ErrClosed) {
		t.Errorf("Remember after Close: %v, want ErrClosed", err)
	}
	if _, err := st.Get(ctx, "", r.Fact.ID); !errors.Is(err, facts.ErrClosed) {
		t.Errorf("Get after Close: %v, want ErrClosed", err)
	}
	if _, err := st.Facts(ctx, "", "u"); !errors.Is(err, facts.ErrClosed) {
		t.Errorf("Facts after Close: %v, want ErrClosed", err)
	}
	if _, err := st.Audit(ctx, "", "u"); !errors.Is(err, facts.ErrClosed) {
		t.Errorf("Audit after Close: %v, want ErrClosed", err)
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
