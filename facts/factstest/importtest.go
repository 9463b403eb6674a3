package factstest

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
)

// importer returns st as a facts.Importer and a facts.Lister, or skips
// the test: an import needs both.
func importer(t *testing.T, st facts.Store) (facts.Importer, facts.Lister) {
	t.Helper()
	imp, ok := st.(facts.Importer)
	lst, ok2 := st.(facts.Lister)
	if !ok || !ok2 {
		t.Skipf("%T does not implement facts.Importer and facts.Lister", st)
	}
	return imp, lst
}

// history gives alice of tenant acme every kind of history, and bob a
// fact of his own. Alice has a fact superseded (its validity closed), one
// edited, one forgotten, and one with a source, metadata, an embedding
// and a validity in the past. She also has one extracted from a turn
// recorded as extracted. It returns alice's facts and audit log.
func (e *env) history() ([]facts.Fact, []facts.AuditEntry) {
	e.t.Helper()
	a := e.remember("acme", "alice", "Lives in Berlin.", 0.7)
	e.clock.Advance(time.Hour)
	if _, err := e.mem.Supersede(e.ctx, facts.SupersedeRequest{Tenant: "acme", ID: a.Fact.ID, Text: "Lives in Paris.", By: "agent", Reason: "moved"}); err != nil {
		e.t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	b := e.remember("acme", "alice", "Has a cat.", 0)
	if _, err := e.mem.Edit(e.ctx, facts.EditRequest{Tenant: "acme", ID: b.Fact.ID, Text: ptr("Has a cat named Tom."), Metadata: map[string]*string{"pet": ptr("cat")}}); err != nil {
		e.t.Fatal(err)
	}
	c := e.remember("acme", "alice", "Likes jazz.", 0)
	if err := e.mem.Forget(e.ctx, "acme", c.Fact.ID, "user:alice", "private"); err != nil {
		e.t.Fatal(err)
	}
	from, to := start.Add(-400*24*time.Hour), start.Add(-30*24*time.Hour)
	if _, err := e.mem.Remember(e.ctx, facts.RememberRequest{Tenant: "acme", UserID: "alice", Text: "Worked at Initech.", Confidence: 0.9,
		Source: facts.Source{SessionID: "s1", StepSeq: 4, Agent: "coder"}, Metadata: map[string]string{"k": "v"}, ValidFrom: from, ValidTo: to}); err != nil {
		e.t.Fatal(err)
	}
	// An embedding is kept as given.
	if err := e.st.Update(e.ctx, "acme", "alice", func(cur []facts.Fact) (facts.Changes, error) {
		f := cur[len(cur)-1]
		f.Embedding = []float32{0.25, -1.5, 3e-7}
		return facts.Changes{Put: []facts.Fact{f}}, nil
	}); err != nil {
		e.t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	if _, err := e.mem.Extract(e.ctx, &teaExtractor{text: "Speaks Dutch."}, onceTurn("acme", "alice", 9)); err != nil {
		e.t.Fatal(err)
	}
	e.remember("acme", "bob", "Plays chess.", 0)
	fs, err := e.st.Facts(e.ctx, "acme", "alice")
	if err != nil {
		e.t.Fatal(err)
	}
	au, err := e.st.Audit(e.ctx, "acme", "alice")
	if err != nil {
		e.t.Fatal(err)
	}
	return fs, au
}

// sameAudit fails t unless got is want, Seq aside (the store assigns
// it), with Seq increasing.
func sameAudit(t *testing.T, got, want []facts.AuditEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d audit entries, want %d:\n got %+v\nwant %+v", len(got), len(want), got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if i > 0 && g.Seq <= got[i-1].Seq {
			t.Fatalf("audit seq %d after %d", g.Seq, got[i-1].Seq)
		}
		if !g.At.Equal(w.At) {
			t.Fatalf("audit[%d].At = %v, want %v", i, g.At, w.At)
		}
		g.Seq, w.Seq, g.At, w.At = 0, 0, time.Time{}, time.Time{}
		for _, s := range []*facts.FactState{g.Before, g.After, w.Before, w.After} {
			if s != nil {
				s.ValidFrom, s.ValidTo = s.ValidFrom.UTC(), s.ValidTo.UTC()
			}
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("audit[%d]:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

// importRoundTrip: a user's facts and audit log imported into another
// store read back the same, every field (Seq aside, which keeps its
// order), and the imported facts are the user's to change.
func (s *suite) importRoundTrip(t *testing.T) {
	src := s.env(t)
	fs, au := src.history()
	if len(fs) != 5 || len(au) != 10 {
		t.Fatalf("history: %d facts, %d audit entries; want 5 and 10", len(fs), len(au))
	}
	dst := s.env(t)
	imp, lst := importer(t, dst.st)
	if err := imp.ImportUser(dst.ctx, "acme", "alice", fs, au); err != nil {
		t.Fatalf("ImportUser: %v", err)
	}
	got, err := dst.st.Facts(dst.ctx, "acme", "alice")
	if err != nil || len(got) != len(fs) {
		t.Fatalf("Facts after import = %d, %v; want %d", len(got), err, len(fs))
	}
	for i := range fs {
		sameFact(t, got[i], fs[i])
	}
	gotAudit, err := dst.st.Audit(dst.ctx, "acme", "alice")
	if err != nil {
		t.Fatal(err)
	}
	sameAudit(t, gotAudit, au)
	// The turn extracted is recorded as such in the store imported into.
	if _, ok := dst.st.(facts.Extractions); ok && !dst.extracted("acme", "alice", 9) {
		t.Fatal("the turn extracted is not recorded after the import")
	}
	if tenants, err := lst.Tenants(dst.ctx); err != nil || !slices.Equal(tenants, []string{"acme"}) {
		t.Fatalf("Tenants = %v, %v; want [acme]", tenants, err)
	}
	// The imported facts are the user's: superseding one works, and
	// Get finds it in the tenant.
	i := slices.IndexFunc(got, func(f facts.Fact) bool { return f.Text == "Has a cat named Tom." })
	if r, err := dst.mem.Supersede(dst.ctx, facts.SupersedeRequest{Tenant: "acme", ID: got[i].ID, Text: "Has two cats."}); err != nil || r.Previous.ID != got[i].ID {
		t.Fatalf("Supersede of an imported fact = %+v, %v", r, err)
	}
	if _, err := dst.mem.Get(dst.ctx, "acme", fs[0].ID); err != nil {
		t.Fatalf("Get of an imported fact: %v", err)
	}
	// An empty import is nothing, and no user.
	if err := imp.ImportUser(dst.ctx, "acme", "nobody", nil, nil); err != nil {
		t.Fatalf("ImportUser of nothing: %v", err)
	}
	if users, err := lst.Users(dst.ctx, "acme"); err != nil || !slices.Equal(users, []string{"alice"}) {
		t.Fatalf("Users = %v, %v; want [alice]", users, err)
	}
}

// importConflict: an import into a user who has facts, or only audit
// entries (a forgotten user), is a conflict that writes nothing. So is an
// import of a fact ID another user of the tenant has. An import that is
// bad input writes nothing either.
func (s *suite) importConflict(t *testing.T) {
	src := s.env(t)
	fs, au := src.history()
	e := s.env(t)
	imp, lst := importer(t, e.st)
	if err := imp.ImportUser(e.ctx, "acme", "alice", fs, au); err != nil {
		t.Fatal(err)
	}
	wantConflict := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, agentmem.ErrConflict) {
			t.Fatalf("%s: %v, want ErrConflict", what, err)
		}
	}
	wantConflict("the same import again", imp.ImportUser(e.ctx, "acme", "alice", fs, au))
	wantConflict("an import of audit entries into a user with facts", imp.ImportUser(e.ctx, "acme", "alice", nil, au[:1]))
	// Another user, with alice's fact IDs: taken in the tenant.
	carol := make([]facts.Fact, len(fs))
	for i, f := range fs {
		f.UserID = "carol"
		carol[i] = f
	}
	wantConflict("another user's fact IDs", imp.ImportUser(e.ctx, "acme", "carol", carol, nil))
	// The same IDs in another tenant are free.
	for i := range carol {
		carol[i].Tenant = "globex"
	}
	if err := imp.ImportUser(e.ctx, "globex", "carol", carol, nil); err != nil {
		t.Fatalf("the same IDs in another tenant: %v", err)
	}
	// A forgotten user keeps its audit log, and is not new.
	if _, err := e.mem.ForgetUser(e.ctx, "globex", "carol", "op", "gone"); err != nil {
		t.Fatal(err)
	}
	if users, err := lst.Users(e.ctx, "globex"); err != nil || !slices.Equal(users, []string{"carol"}) {
		t.Fatalf("Users of a tenant whose only user was forgotten = %v, %v; want [carol]", users, err)
	}
	wantConflict("an import into a forgotten user", imp.ImportUser(e.ctx, "globex", "carol", carol, nil))
	if n := len(e.list("globex", "carol", true)); n != 0 {
		t.Fatalf("a refused import wrote %d facts", n)
	}

	// Bad input: nothing is written.
	bad := slices.Clone(fs)
	for i := range bad {
		bad[i].Tenant, bad[i].UserID = "acme", "dave"
	}
	bad[len(bad)-1].Confidence = 2
	if err := imp.ImportUser(e.ctx, "acme", "dave", bad, nil); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("ImportUser of a bad fact = %v, want ErrInvalid", err)
	}
	dup := []facts.Fact{bad[0], bad[0]}
	if err := imp.ImportUser(e.ctx, "acme", "dave", dup, nil); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("ImportUser of an ID twice = %v, want ErrInvalid", err)
	}
	if err := imp.ImportUser(e.ctx, "acme", "dave", bad[:1], au[:1]); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("ImportUser of another user's audit entry = %v, want ErrInvalid", err)
	}
	record := facts.AuditEntry{Tenant: "acme", UserID: "dave", Action: facts.ActionExtracted, SessionID: "s1", StepSeq: 2, At: e.now()}
	if err := imp.ImportUser(e.ctx, "acme", "dave", nil, []facts.AuditEntry{record, record}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("ImportUser of a turn recorded twice = %v, want ErrInvalid", err)
	}
	if err := imp.ImportUser(e.ctx, "acme", "alice", fs, nil); !errors.Is(err, agentmem.ErrConflict) {
		t.Fatalf("a conflict is found after the check: %v", err)
	}
	if users, err := lst.Users(e.ctx, "acme"); err != nil || !slices.Equal(users, []string{"alice"}) {
		t.Fatalf("Users after refused imports = %v, %v; want [alice]", users, err)
	}
}

// lister: Tenants and Users name every tenant and user with facts or
// audit entries, sorted bytewise, each once.
func (s *suite) lister(t *testing.T) {
	e := s.env(t)
	_, lst := importer(t, e.st)
	if tenants, err := lst.Tenants(e.ctx); err != nil || len(tenants) != 0 {
		t.Fatalf("Tenants of an empty store = %v, %v", tenants, err)
	}
	for _, u := range [][2]string{{"b", "zed"}, {"b", "Zed"}, {"", "émile"}, {"b", "amy"}, {"a", "x"}, {"b", "amy"}} {
		e.remember(u[0], u[1], "Knows "+u[1]+".", 0)
	}
	if tenants, err := lst.Tenants(e.ctx); err != nil || !slices.Equal(tenants, []string{"", "a", "b"}) {
		t.Fatalf("Tenants = %q, %v", tenants, err)
	}
	if users, err := lst.Users(e.ctx, "b"); err != nil || !slices.Equal(users, []string{"Zed", "amy", "zed"}) {
		t.Fatalf("Users(b) = %q, %v", users, err)
	}
	if users, err := lst.Users(e.ctx, "nobody"); err != nil || len(users) != 0 {
		t.Fatalf("Users of a tenant without facts = %q, %v", users, err)
	}
}
