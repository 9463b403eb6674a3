package factstest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
)

// extractions returns st as a facts.Extractions, or skips the test.
func extractions(t *testing.T, st facts.Store) facts.Extractions {
	t.Helper()
	x, ok := st.(facts.Extractions)
	if !ok {
		t.Skipf("%T does not implement facts.Extractions", st)
	}
	return x
}

// teaExtractor adds the turn's fact, text, and reinforces the known fact
// "Drinks green tea.", counting its calls.
type teaExtractor struct {
	text  string
	calls atomic.Int32
}

func (x *teaExtractor) Extract(_ context.Context, req facts.ExtractRequest) ([]facts.Decision, error) {
	x.calls.Add(1)
	ds := []facts.Decision{{Op: facts.OpAdd, Text: x.text}}
	for _, f := range req.Facts {
		if f.Text == "Drinks green tea." {
			ds = append(ds, facts.Decision{Op: facts.OpReinforce, FactID: f.ID})
		}
	}
	return ds, nil
}

// onceTurn is a turn of session s1 ending at step, to extract once.
func onceTurn(tenant, user string, step int64) facts.Turn {
	return facts.Turn{Tenant: tenant, UserID: user, Once: true, Source: facts.Source{SessionID: "s1", StepSeq: step, Agent: "helper"},
		Messages: []agentmem.Message{
			{Role: agentmem.RoleUser, Content: agentmem.Text("I live in Berlin, and I still drink green tea.")},
			{Role: agentmem.RoleAssistant, Content: agentmem.Text("Noted.")},
		}}
}

// extracted reports whether the store has the turn (s1, step) of the
// user as extracted.
func (e *env) extracted(tenant, user string, step int64) bool {
	e.t.Helper()
	ok, err := extractions(e.t, e.st).Extracted(e.ctx, tenant, user, "s1", step)
	if err != nil {
		e.t.Fatalf("Extracted: %v", err)
	}
	return ok
}

// onceExtract: a turn extracted once is recorded, with what it taught.
// Extracting it again calls no extractor and changes nothing, even when
// it taught nothing. The record is the user's and the turn's, and the
// audit entries of the extraction name the turn.
func (s *suite) onceExtract(t *testing.T) {
	e := s.env(t)
	extractions(t, e.st)
	tea := e.remember("", "alice", "Drinks green tea.", 0)
	if e.extracted("", "alice", 4) {
		t.Fatal("a turn never extracted is extracted")
	}
	x := &teaExtractor{text: "Lives in Berlin."}
	got, err := e.mem.Extract(e.ctx, x, onceTurn("", "alice", 4))
	if err != nil || got.Replayed || len(got.Results) != 2 || got.Results[0].Outcome != facts.OutcomeAdded || got.Results[1].Outcome != facts.OutcomeReinforced {
		t.Fatalf("Extract = %+v, %v; want an add and a reinforcement", got, err)
	}
	if !e.extracted("", "alice", 4) {
		t.Fatal("the turn extracted is not recorded")
	}
	berlin := got.Results[0].Fact
	e.clock.Advance(halfLife)
	again, err := e.mem.Extract(e.ctx, x, onceTurn("", "alice", 4))
	if err != nil || !again.Replayed || len(again.Decisions) != 0 || len(again.Results) != 0 {
		t.Fatalf("Extract of the same turn again = %+v, %v; want a replay", again, err)
	}
	if n := x.calls.Load(); n != 1 {
		t.Fatalf("the extractor was called %d times for one turn", n)
	}
	if f, err := e.mem.Get(e.ctx, "", tea.Fact.ID); err != nil || f.Reinforcements != 1 || !f.ReinforcedAt.Equal(berlin.CreatedAt) {
		t.Fatalf("the tea after a replayed turn = %+v, %v; want reinforced once", f, err)
	}
	if fs := e.list("", "alice", true); len(fs) != 2 {
		t.Fatalf("facts after a replayed turn = %+v", fs)
	}
	au := e.audit("", "alice")
	if len(au) != 3 {
		t.Fatalf("audit = %+v; want the tea's add, Berlin's, and the turn's record", au)
	}
	if a := au[0]; a.SessionID != "" || a.StepSeq != 0 {
		t.Fatalf("an entry of no extraction names a turn: %+v", a)
	}
	if a := au[1]; a.Action != facts.ActionAdded || a.FactID != berlin.ID || a.SessionID != "s1" || a.StepSeq != 4 {
		t.Fatalf("the add of the extraction = %+v; want Berlin's, naming the turn", a)
	}
	if a := au[2]; a.Action != facts.ActionExtracted || a.FactID != "" || a.SessionID != "s1" || a.StepSeq != 4 || a.By != "helper" ||
		!a.At.Equal(berlin.CreatedAt) || a.Before != nil || a.After != nil {
		t.Fatalf("the record of the turn = %+v", a)
	}
	if h, err := e.mem.Changelog(e.ctx, "", "alice", berlin.ID); err != nil || len(h) != 1 || h[0].Action != facts.ActionAdded {
		t.Fatalf("Berlin's history = %+v, %v; want its add alone", h, err)
	}

	// A turn that teaches nothing is recorded too.
	none := facts.ExtractorFunc(func(context.Context, facts.ExtractRequest) ([]facts.Decision, error) {
		x.calls.Add(1)
		return nil, nil
	})
	for i, want := range []bool{false, true} {
		if got, err := e.mem.Extract(e.ctx, none, onceTurn("", "alice", 5)); err != nil || got.Replayed != want || len(got.Results) != 0 {
			t.Fatalf("Extract #%d of a turn that teaches nothing = %+v, %v; want replayed %v", i+1, got, err, want)
		}
	}
	if n := x.calls.Load(); n != 2 {
		t.Fatalf("the extractor was called %d times for two turns", n)
	}
	// The record is the user's and the tenant's: the same source for
	// another user, or in another tenant, is another turn.
	for _, u := range [][2]string{{"", "bob"}, {"acme", "alice"}} {
		if e.extracted(u[0], u[1], 4) {
			t.Fatalf("%q/%q has alice's turn as extracted", u[0], u[1])
		}
		if got, err := e.mem.Extract(e.ctx, x, onceTurn(u[0], u[1], 4)); err != nil || got.Replayed {
			t.Fatalf("Extract for %q/%q = %+v, %v; want an extraction", u[0], u[1], got, err)
		}
	}
	// Without Once, a turn is extracted each time it is given.
	plain := onceTurn("", "alice", 4)
	plain.Once = false
	if got, err := e.mem.Extract(e.ctx, x, plain); err != nil || got.Replayed || len(got.Results) != 2 {
		t.Fatalf("Extract without Once = %+v, %v", got, err)
	}
	// Once needs a turn to name.
	bad := onceTurn("", "alice", 6)
	bad.Source.SessionID = ""
	if _, err := e.mem.Extract(e.ctx, x, bad); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("Extract with Once and no session = %v, want ErrInvalid", err)
	}
}

// onceUpdate: an Update that records a turn extracted already is a
// conflict (ErrExtracted) and writes nothing. That keeps two extractions
// of a turn that race from both applying. A turn recorded twice in one
// Update, or a record that names a fact or no turn, is bad input.
func (s *suite) onceUpdate(t *testing.T) {
	e := s.env(t)
	extractions(t, e.st)
	fact := func(id string) facts.Fact {
		return facts.Fact{ID: id, UserID: "u", Text: "Fact " + id + ".", Confidence: 0.5, CreatedAt: e.now(), ReinforcedAt: e.now(), ValidFrom: e.now()}
	}
	record := facts.AuditEntry{UserID: "u", Action: facts.ActionExtracted, SessionID: "s1", StepSeq: 3, At: e.now()}
	write := func(c facts.Changes) error {
		return e.st.Update(e.ctx, "", "u", func([]facts.Fact) (facts.Changes, error) { return c, nil })
	}
	if err := write(facts.Changes{Put: []facts.Fact{fact("a")}, Audit: []facts.AuditEntry{record}}); err != nil {
		t.Fatal(err)
	}
	err := write(facts.Changes{Put: []facts.Fact{fact("b")}, Audit: []facts.AuditEntry{record}})
	if !errors.Is(err, facts.ErrExtracted) || !errors.Is(err, agentmem.ErrConflict) {
		t.Fatalf("Update recording a turn extracted already = %v, want ErrExtracted", err)
	}
	other := record
	other.StepSeq = 4
	for name, c := range map[string]facts.Changes{
		"a turn twice":     {Audit: []facts.AuditEntry{other, other}},
		"a fact":           {Audit: []facts.AuditEntry{func() facts.AuditEntry { r := other; r.FactID = "a"; return r }()}},
		"no session":       {Audit: []facts.AuditEntry{func() facts.AuditEntry { r := other; r.SessionID = ""; return r }()}},
		"a negative step":  {Audit: []facts.AuditEntry{func() facts.AuditEntry { r := other; r.StepSeq = -1; return r }()}},
		"a step, no turn":  {Audit: []facts.AuditEntry{{UserID: "u", FactID: "a", Action: facts.ActionAdded, StepSeq: 2, At: e.now()}}},
		"a state recorded": {Audit: []facts.AuditEntry{func() facts.AuditEntry { r := other; r.After = fact("a").State(); return r }()}},
	} {
		if err := write(c); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("Update with %s: %v, want ErrInvalid", name, err)
		}
	}
	if fs := e.list("", "u", true); len(fs) != 1 || fs[0].ID != "a" {
		t.Fatalf("refused updates wrote facts: %+v", fs)
	}
	if au := e.audit("", "u"); len(au) != 1 || au[0].SessionID != "s1" || au[0].StepSeq != 3 {
		t.Fatalf("refused updates wrote audit entries: %+v", au)
	}
	if e.extracted("", "u", 4) {
		t.Fatal("a refused record of a turn is recorded")
	}
}

// onceConcurrent: extractions of one turn that race, over one store or
// several handles on its database, apply one of them: the turn's
// reinforcement counts once and its record is written once; the others
// are replays.
func (s *suite) onceConcurrent(t *testing.T) {
	e := s.env(t)
	extractions(t, e.st)
	mems := s.handles(t, e)
	tea := e.remember("", "alice", "Drinks green tea.", 0)
	n := s.cfg.Writers
	x := &teaExtractor{text: "Lives in Berlin."}
	var applied, replayed atomic.Int32
	parallel(t, n, mems, func(i int, m *facts.Memory) error {
		got, err := m.Extract(e.ctx, x, onceTurn("", "alice", 7))
		if err != nil {
			return fmt.Errorf("extraction %d: %w", i, err)
		}
		if got.Replayed {
			replayed.Add(1)
		} else {
			applied.Add(1)
		}
		return nil
	})
	if applied.Load() != 1 || replayed.Load() != int32(n-1) {
		t.Fatalf("%d extractions of one turn: %d applied, %d replayed; want 1 and %d", n, applied.Load(), replayed.Load(), n-1)
	}
	if f, err := e.mem.Get(e.ctx, "", tea.Fact.ID); err != nil || f.Reinforcements != 1 {
		t.Fatalf("the tea = %+v, %v; want reinforced once", f, err)
	}
	records := 0
	for _, a := range e.audit("", "alice") {
		if a.Action == facts.ActionExtracted {
			records++
		}
	}
	if fs := e.list("", "alice", true); len(fs) != 2 || records != 1 {
		t.Fatalf("%d facts and %d records of the turn, want 2 and 1: %+v", len(fs), records, fs)
	}
}
