package factstest

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
)

// damaged checks what a store does with a fact whose stored form does not
// decode (Config.Damage). The user's fact list leaves it out and reports
// it to the context, so the list, searches and new facts of the user go
// on. Get of it fails with agentmem.ErrDamaged, never as missing.
func (s *suite) damaged(t *testing.T) {
	if s.cfg.Damage == nil {
		t.Skip("the backend cannot hold a damaged fact (Config.Damage is nil)")
	}
	e := s.env(t)
	var ids []string
	for _, text := range []string{"Uses Go at work.", "Likes green tea.", "Lives in Oslo."} {
		ids = append(ids, e.remember("acme", "alice", text, 0.9).Fact.ID)
	}
	s.cfg.Damage(t, e.st, "acme", ids[1])
	var mu sync.Mutex
	var reported []string
	e.ctx = agentmem.WithDamageReporter(e.ctx, func(d *agentmem.DamagedError) {
		mu.Lock()
		defer mu.Unlock()
		if d.Kind != "fact" || d.Tenant != "acme" || d.Err == nil {
			t.Errorf("reported %+v", d)
		}
		reported = append(reported, d.ID)
	})
	wantReported := func(what string) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if !slices.Contains(reported, ids[1]) || slices.ContainsFunc(reported, func(id string) bool { return id != ids[1] }) {
			t.Errorf("%s reported %v, want %s", what, reported, ids[1])
		}
		reported = nil
	}
	var got []string
	for _, f := range e.list("acme", "alice", true) {
		got = append(got, f.ID)
	}
	if want := []string{ids[0], ids[2]}; !slices.Equal(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	wantReported("List")
	hits, err := e.mem.Search(e.ctx, facts.SearchRequest{Tenant: "acme", UserID: "alice", Query: "tea Oslo Go", K: 10})
	if err != nil || len(hits) != 2 {
		t.Errorf("Search = %d hits, %v; want 2", len(hits), err)
	}
	wantReported("Search")
	added := e.remember("acme", "alice", "Works from home on Fridays.", 0.8)
	if added.Outcome != facts.OutcomeAdded {
		t.Errorf("Remember beside a damaged fact: %+v", added)
	}
	if n := len(e.list("acme", "alice", true)); n != 3 {
		t.Errorf("after Remember: %d facts, want 3", n)
	}
	_, err = e.mem.Get(e.ctx, "acme", ids[1])
	var d *agentmem.DamagedError
	if !errors.As(err, &d) || d.ID != ids[1] || errors.Is(err, agentmem.ErrNotFound) {
		t.Errorf("Get of the damaged fact: %v, want a *DamagedError", err)
	}
	if _, err := e.mem.Get(e.ctx, "acme", ids[0]); err != nil {
		t.Errorf("Get of a healthy fact: %v", err)
	}
}
