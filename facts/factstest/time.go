package factstest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
)

// ids returns the IDs of fs.
func ids(fs []facts.Fact) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return out
}

func (e *env) listReq(req facts.ListRequest) []facts.Fact {
	e.t.Helper()
	fs, err := e.mem.ListFacts(e.ctx, req)
	if err != nil {
		e.t.Fatalf("ListFacts(%+v): %v", req, err)
	}
	return fs
}

func wantInvalid(t *testing.T, what, field string, err error) {
	t.Helper()
	var ie *agentmem.InvalidError
	if !errors.As(err, &ie) || !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("%s: %v, want an *agentmem.InvalidError", what, err)
	}
	if field != "" && ie.Field != field {
		t.Fatalf("%s: error names field %q, want %q (%v)", what, ie.Field, field, err)
	}
}

// timeValidity: a fact holds from when it is recorded unless told
// otherwise; given times round-trip at microsecond precision in UTC; a
// valid_to not after valid_from is refused.
func (s *suite) timeValidity(t *testing.T) {
	e := s.env(t)
	r := e.remember("", "u", "Owns a red bicycle.", 0)
	if !r.Fact.ValidFrom.Equal(e.now()) || !r.Fact.ValidTo.IsZero() || !r.Fact.HoldsAt(e.now()) {
		t.Fatalf("default validity = [%v, %v), want [now %v, open)", r.Fact.ValidFrom, r.Fact.ValidTo, e.now())
	}
	from := start.Add(-365 * 24 * time.Hour).Add(time.Nanosecond * 1500)
	to := start.Add(-30 * 24 * time.Hour)
	past, err := e.mem.Remember(e.ctx, facts.RememberRequest{UserID: "u", Text: "Worked at Initech.", ValidFrom: from, ValidTo: to})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.mem.Get(e.ctx, "", past.Fact.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.ValidFrom.Equal(from.Truncate(time.Microsecond)) || !got.ValidTo.Equal(to.Truncate(time.Microsecond)) || got.ValidFrom.Location() != time.UTC || got.ValidTo.Location() != time.UTC {
		t.Fatalf("stored validity = [%v, %v), want [%v, %v) in UTC", got.ValidFrom, got.ValidTo, from, to)
	}
	if cur := ids(e.list("", "u", false)); !slices.Equal(cur, []string{r.Fact.ID}) {
		t.Fatalf("facts holding now = %v, want only %s (the other ended a month ago)", cur, r.Fact.ID)
	}
	if all := e.list("", "u", true); len(all) != 2 {
		t.Fatalf("every fact = %d, want 2", len(all))
	}
	for name, req := range map[string]facts.RememberRequest{
		"valid_to before valid_from": {UserID: "u", Text: "Bad.", ValidFrom: to, ValidTo: from},
		"valid_to equal valid_from":  {UserID: "u", Text: "Bad.", ValidFrom: to, ValidTo: to},
		"valid_to before now":        {UserID: "u", Text: "Bad.", ValidTo: to},
	} {
		_, err := e.mem.Remember(e.ctx, req)
		wantInvalid(t, name, "valid_to", err)
	}
	if n := len(e.list("", "u", true)); n != 2 || len(e.audit("", "u")) != 2 {
		t.Fatal("a refused remember wrote something")
	}
}

// timeSupersedeCloses: superseding closes the old fact at the new one's
// valid_from, so the old one stays readable and answers for its period.
func (s *suite) timeSupersedeCloses(t *testing.T) {
	e := s.env(t)
	berlin := e.remember("", "u", "Lives in Berlin.", 0.9)
	e.clock.Advance(48 * time.Hour)
	moved := e.now().Add(-24 * time.Hour) // the user moved yesterday
	r, err := e.mem.Supersede(e.ctx, facts.SupersedeRequest{ID: berlin.Fact.ID, Text: "Lives in Paris.", ValidFrom: moved, By: "user", Reason: "moved"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Fact.ValidFrom.Equal(moved) || !r.Previous.ValidTo.Equal(moved) {
		t.Fatalf("Supersede: new from %v, old to %v; want both %v", r.Fact.ValidFrom, r.Previous.ValidTo, moved)
	}
	old, err := e.mem.Get(e.ctx, "", berlin.Fact.ID)
	if err != nil || !old.ValidTo.Equal(moved) || old.SupersededBy != r.Fact.ID {
		t.Fatalf("old fact = %+v, %v; want readable, closed at %v", old, err, moved)
	}
	if cur := ids(e.list("", "u", false)); !slices.Equal(cur, []string{r.Fact.ID}) {
		t.Fatalf("facts holding now = %v, want only Paris", cur)
	}
	// The supersession is in the old fact's changelog, before and after.
	log, err := e.mem.Changelog(e.ctx, "", "u", berlin.Fact.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 2 || log[0].Action != facts.ActionAdded || log[0].After == nil || log[0].After.Text != "Lives in Berlin." ||
		log[1].Action != facts.ActionSuperseded || log[1].Successor != r.Fact.ID || log[1].By != "user" || log[1].Reason != "moved" ||
		log[1].Before == nil || !log[1].Before.ValidTo.IsZero() || log[1].After == nil || !log[1].After.ValidTo.Equal(moved) {
		t.Fatalf("changelog = %+v", log)
	}

	// A successor that began before the old fact did: the old one never
	// held, and is closed at its own valid_from.
	e.clock.Advance(time.Hour)
	car := e.remember("", "u", "Drives a Volvo.", 0)
	r2, err := e.mem.Supersede(e.ctx, facts.SupersedeRequest{ID: car.Fact.ID, Text: "Drives a Tesla.", ValidFrom: start})
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Previous.ValidTo.Equal(car.Fact.ValidFrom) || r2.Previous.HoldsAt(car.Fact.ValidFrom) {
		t.Fatalf("old fact closed at %v, want at its valid_from %v (it never held)", r2.Previous.ValidTo, car.Fact.ValidFrom)
	}

	// An extractor's supersede decision closes at the time it is applied.
	e.clock.Advance(time.Hour)
	job := e.remember("", "u", "Works as a nurse.", 0)
	e.clock.Advance(time.Hour)
	rs, err := e.mem.Apply(e.ctx, "", "u", facts.Source{Agent: "x"}, []facts.Decision{{Op: facts.OpSupersede, FactID: job.Fact.ID, Text: "Works as a doctor."}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e.mem.Get(e.ctx, "", job.Fact.ID); err != nil || !got.ValidTo.Equal(e.now()) || !rs[0].Fact.ValidFrom.Equal(e.now()) {
		t.Fatalf("after Apply: old %+v, new %+v; want closed at now %v", got, rs[0].Fact, e.now())
	}

	// A fact that already ended earlier keeps its end.
	e.clock.Advance(time.Hour)
	ended := e.now().Add(-30 * time.Minute)
	trip, err := e.mem.Remember(e.ctx, facts.RememberRequest{UserID: "u", Text: "Is on holiday in Spain.", ValidFrom: ended.Add(-time.Hour), ValidTo: ended})
	if err != nil {
		t.Fatal(err)
	}
	r3, err := e.mem.Supersede(e.ctx, facts.SupersedeRequest{ID: trip.Fact.ID, Text: "Is on holiday in Portugal."})
	if err != nil || !r3.Previous.ValidTo.Equal(ended) {
		t.Fatalf("superseding an ended fact: %+v, %v; want its valid_to kept at %v", r3.Previous, err, ended)
	}
}

// timeAsOf: as_of lists and searches what held at a time, superseded
// facts included; confidence is still what a fact is worth now.
func (s *suite) timeAsOf(t *testing.T) {
	e := s.env(t)
	t0 := e.now()
	berlin := e.remember("", "u", "Lives in Berlin.", 0.9)
	e.remember("", "u", "Likes jazz.", 0.8)
	e.clock.Advance(3 * halfLife)
	t1 := e.now()
	paris, err := e.mem.Supersede(e.ctx, facts.SupersedeRequest{ID: berlin.Fact.ID, Text: "Lives in Paris.", Confidence: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	texts := func(fs []facts.Fact) string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Text)
		}
		return strings.Join(out, "|")
	}
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{t0.Add(-time.Second), ""},
		{t0, "Lives in Berlin.|Likes jazz."},
		{t1.Add(-time.Microsecond), "Lives in Berlin.|Likes jazz."},
		{t1, "Likes jazz.|Lives in Paris."},
		{e.now().Add(24 * time.Hour), "Likes jazz.|Lives in Paris."},
	} {
		if got := texts(e.listReq(facts.ListRequest{UserID: "u", AsOf: c.at})); got != c.want {
			t.Errorf("as of %v: %q, want %q", c.at, got, c.want)
		}
	}
	hits, err := e.mem.Search(e.ctx, facts.SearchRequest{UserID: "u", Query: "where does the user live", AsOf: t1.Add(-time.Hour)})
	if err != nil || len(hits) != 1 || hits[0].Fact.ID != berlin.Fact.ID {
		t.Fatalf("Search as of before the move = %+v, %v; want Berlin", hits, err)
	}
	old, err := e.mem.Get(e.ctx, "", berlin.Fact.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := e.mem.Confidence(old); !near(hits[0].Confidence, want) || near(want, 0.9) {
		t.Fatalf("as-of hit confidence %v, want its decayed confidence now %v", hits[0].Confidence, want)
	}
	hits, err = e.mem.Search(e.ctx, facts.SearchRequest{UserID: "u", Query: "where does the user live"})
	if err != nil || len(hits) != 1 || hits[0].Fact.ID != paris.Fact.ID {
		t.Fatalf("Search now = %+v, %v; want Paris", hits, err)
	}
	_, err = e.mem.ListFacts(e.ctx, facts.ListRequest{UserID: "u", AsOf: t1, IncludeSuperseded: true})
	wantInvalid(t, "as_of with include_superseded", "as_of", err)
}

// timePeriods: the same statement about a period that does not overlap an
// existing fact's is another fact; one that overlaps reinforces it. A fact
// that begins later does not hold now, but does as of then.
func (s *suite) timePeriods(t *testing.T) {
	e := s.env(t)
	day := 24 * time.Hour
	y2020 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	a, err := e.mem.Remember(e.ctx, facts.RememberRequest{UserID: "u", Text: "Lives in Rome.", ValidFrom: y2020, ValidTo: y2020.Add(365 * day)})
	if err != nil {
		t.Fatal(err)
	}
	b := e.remember("", "u", "Lives in Rome.", 0) // from now: another period
	if b.Outcome != facts.OutcomeAdded || b.Fact.ID == a.Fact.ID {
		t.Fatalf("the same statement for another period = %+v, want added", b)
	}
	c, err := e.mem.Remember(e.ctx, facts.RememberRequest{UserID: "u", Text: "Lives in Rome.", ValidFrom: y2020.Add(100 * day)})
	if err != nil || c.Outcome != facts.OutcomeReinforced {
		t.Fatalf("an overlapping period = %+v, %v; want reinforced", c, err)
	}
	future := e.now().Add(30 * day)
	f, err := e.mem.Remember(e.ctx, facts.RememberRequest{UserID: "u", Text: "Works at Globex.", ValidFrom: future})
	if err != nil || f.Outcome != facts.OutcomeAdded {
		t.Fatal(f, err)
	}
	if slices.Contains(ids(e.list("", "u", false)), f.Fact.ID) {
		t.Fatal("a fact that begins next month holds now")
	}
	if got := ids(e.listReq(facts.ListRequest{UserID: "u", AsOf: future})); !slices.Contains(got, f.Fact.ID) {
		t.Fatalf("as of next month: %v, want %s", got, f.Fact.ID)
	}
}

func ptr[T any](v T) *T { return &v }

// editFields: an edit changes text, confidence, metadata and validity in
// place, and the changelog records each change, before and after.
func (s *suite) editFields(t *testing.T) {
	e := s.env(t)
	r, err := e.mem.Remember(e.ctx, facts.RememberRequest{UserID: "u", Text: "Works on billing.", Confidence: 0.5,
		Metadata: map[string]string{"project": "billing", "team": "core"}})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(halfLife)
	t1 := e.now()
	f, err := e.mem.Edit(e.ctx, facts.EditRequest{ID: r.Fact.ID, Text: ptr("Works on invoicing."), Confidence: ptr(0.9),
		Metadata: map[string]*string{"project": ptr("invoicing"), "team": nil, "lang": ptr("go")}, By: "op", Reason: "renamed"})
	if err != nil {
		t.Fatal(err)
	}
	want := r.Fact
	want.Text, want.Confidence, want.ReinforcedAt = "Works on invoicing.", 0.9, t1
	want.Metadata = map[string]string{"project": "invoicing", "lang": "go"}
	sameFact(t, f, want)
	got, err := e.mem.Get(e.ctx, "", r.Fact.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameFact(t, got, want)
	if c := e.mem.Confidence(got); !near(c, 0.9) {
		t.Fatalf("confidence right after the edit = %v, want 0.9: decay restarts from the edit", c)
	}
	e.clock.Advance(time.Hour)
	end := e.now().Add(-time.Minute)
	if _, err := e.mem.Edit(e.ctx, facts.EditRequest{ID: r.Fact.ID, ValidTo: &end, ClearMetadata: true}); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ids(e.list("", "u", false)), r.Fact.ID) {
		t.Fatal("a fact whose valid_to has passed still holds now")
	}
	// Reopening it; an edit that changes nothing writes nothing.
	reopened, err := e.mem.Edit(e.ctx, facts.EditRequest{ID: r.Fact.ID, ValidTo: &time.Time{}})
	if err != nil || !reopened.ValidTo.IsZero() || reopened.Metadata != nil {
		t.Fatalf("reopened = %+v, %v", reopened, err)
	}
	if _, err := e.mem.Edit(e.ctx, facts.EditRequest{ID: r.Fact.ID, Text: ptr("Works on invoicing."), Confidence: ptr(0.9)}); err != nil {
		t.Fatal(err)
	}
	log, err := e.mem.Changelog(e.ctx, "", "u", r.Fact.ID)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, x := range log {
		actions = append(actions, string(x.Action))
	}
	if fmt.Sprint(actions) != "[added updated updated updated]" {
		t.Fatalf("changelog actions = %v", actions)
	}
	u := log[1]
	if u.By != "op" || u.Reason != "renamed" || !u.At.Equal(t1) || u.Before.Text != "Works on billing." || u.After.Text != "Works on invoicing." ||
		!near(u.Before.Confidence, 0.5) || !near(u.After.Confidence, 0.9) || u.Before.Metadata["team"] != "core" || u.After.Metadata["lang"] != "go" || len(u.After.Metadata) != 2 {
		t.Fatalf("edit entry = %+v before %+v after %+v", u, u.Before, u.After)
	}
	if !log[2].After.ValidTo.Equal(end) || !log[2].Before.ValidTo.IsZero() || log[2].After.Metadata != nil || !log[3].After.ValidTo.IsZero() {
		t.Fatalf("validity entries = %+v / %+v", log[2], log[3])
	}
	if _, err := e.mem.Changelog(e.ctx, "", "other", r.Fact.ID); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("another user's changelog of the fact: %v, want ErrNotFound", err)
	}
}

// editBad: bad edits are refused with the field named, and write nothing.
func (s *suite) editBad(t *testing.T) {
	e := s.env(t)
	a := e.remember("", "u", "Lives in Oslo.", 0)
	e.clock.Advance(time.Hour)
	b, err := e.mem.Supersede(e.ctx, facts.SupersedeRequest{ID: a.Fact.ID, Text: "Lives in Bergen."})
	if err != nil {
		t.Fatal(err)
	}
	before := e.audit("", "u")
	early := b.Fact.ValidFrom.Add(-time.Hour)
	many := map[string]*string{}
	for i := range facts.MaxMetadataKeys + 1 {
		many[fmt.Sprint("k", i)] = ptr("v")
	}
	for _, c := range []struct {
		name, field string
		req         facts.EditRequest
	}{
		{"empty text", "text", facts.EditRequest{ID: b.Fact.ID, Text: ptr(" ")}},
		{"long text", "text", facts.EditRequest{ID: b.Fact.ID, Text: ptr(strings.Repeat("x", facts.MaxTextBytes+1))}},
		{"confidence", "confidence", facts.EditRequest{ID: b.Fact.ID, Confidence: ptr(1.5)}},
		{"valid_to before valid_from", "valid_to", facts.EditRequest{ID: b.Fact.ID, ValidTo: &early}},
		{"valid_from after valid_to", "valid_from", facts.EditRequest{ID: a.Fact.ID, ValidFrom: ptr(b.Fact.ValidFrom.Add(time.Hour))}},
		{"no valid_from", "valid_from", facts.EditRequest{ID: b.Fact.ID, ValidFrom: &time.Time{}}},
		{"reopen superseded", "valid_to", facts.EditRequest{ID: a.Fact.ID, ValidTo: &time.Time{}}},
		{"too much metadata", "metadata", facts.EditRequest{ID: b.Fact.ID, Metadata: many}},
		{"empty metadata key", "metadata key", facts.EditRequest{ID: b.Fact.ID, Metadata: map[string]*string{"": ptr("v")}}},
		{"no ID", "id", facts.EditRequest{Text: ptr("x")}},
	} {
		_, err := e.mem.Edit(e.ctx, c.req)
		wantInvalid(t, c.name, c.field, err)
	}
	if _, err := e.mem.Edit(e.ctx, facts.EditRequest{ID: "missing", Text: ptr("x")}); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("editing a missing fact: %v, want ErrNotFound", err)
	}
	for _, id := range []string{a.Fact.ID, b.Fact.ID} {
		got, err := e.mem.Get(e.ctx, "", id)
		want := *b.Previous
		if id == b.Fact.ID {
			want = b.Fact
		}
		if err != nil {
			t.Fatal(err)
		}
		sameFact(t, got, want)
	}
	if after := e.audit("", "u"); len(after) != len(before) {
		t.Fatalf("refused edits wrote audit entries: %+v", after[len(before):])
	}
}

// editForgetErases: forgetting a fact erases what it said from its
// changelog, which still shows that it was added, edited and forgotten.
func (s *suite) editForgetErases(t *testing.T) {
	e := s.env(t)
	r := e.remember("", "u", "Has a secret hobby.", 0)
	if _, err := e.mem.Edit(e.ctx, facts.EditRequest{ID: r.Fact.ID, Text: ptr("Collects rare stamps."), Metadata: map[string]*string{"private": ptr("stamps")}}); err != nil {
		t.Fatal(err)
	}
	keep := e.remember("", "u", "Likes tea.", 0)
	if err := e.mem.Forget(e.ctx, "", r.Fact.ID, "user", "asked"); err != nil {
		t.Fatal(err)
	}
	log, err := e.mem.Changelog(e.ctx, "", "u", r.Fact.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 3 || log[0].Action != facts.ActionAdded || log[1].Action != facts.ActionUpdated || log[2].Action != facts.ActionForgotten {
		t.Fatalf("changelog after forget = %+v", log)
	}
	for _, x := range e.audit("", "u") {
		if x.FactID == r.Fact.ID && (x.Before != nil || x.After != nil) {
			t.Fatalf("an entry of the forgotten fact keeps what it said: %+v", x)
		}
		if s := fmt.Sprintf("%+v %+v %+v", x, x.Before, x.After); strings.Contains(s, "stamps") || strings.Contains(s, "hobby") {
			t.Fatalf("the audit log keeps the forgotten text: %s", s)
		}
	}
	klog, err := e.mem.Changelog(e.ctx, "", "u", keep.Fact.ID)
	if err != nil || len(klog) != 1 || klog[0].After == nil || klog[0].After.Text != "Likes tea." {
		t.Fatalf("another fact's changelog = %+v, %v; want it intact", klog, err)
	}
}

// filterMetadata: lists and searches keep only the facts whose metadata
// has every entry of the filter.
func (s *suite) filterMetadata(t *testing.T) {
	e := s.env(t)
	add := func(text string, md map[string]string) string {
		r, err := e.mem.Remember(e.ctx, facts.RememberRequest{UserID: "u", Text: text, Metadata: md})
		if err != nil {
			t.Fatal(err)
		}
		return r.Fact.ID
	}
	a := add("Uses Postgres for billing.", map[string]string{"project": "billing", "kind": "tech"})
	b := add("Prefers short billing reports.", map[string]string{"project": "billing"})
	add("Uses SQLite for the CLI.", map[string]string{"project": "cli", "kind": "tech"})
	add("Drinks coffee.", nil)
	if got := ids(e.listReq(facts.ListRequest{UserID: "u", Metadata: map[string]string{"project": "billing"}})); !slices.Equal(got, []string{a, b}) {
		t.Fatalf("project=billing: %v, want %v", got, []string{a, b})
	}
	if got := ids(e.listReq(facts.ListRequest{UserID: "u", Metadata: map[string]string{"project": "billing", "kind": "tech"}})); !slices.Equal(got, []string{a}) {
		t.Fatalf("project=billing and kind=tech: %v, want %v", got, []string{a})
	}
	if got := e.listReq(facts.ListRequest{UserID: "u", Metadata: map[string]string{"project": "Billing"}}); len(got) != 0 {
		t.Fatalf("project=Billing (exact match): %v, want none", ids(got))
	}
	hits, err := e.mem.Search(e.ctx, facts.SearchRequest{UserID: "u", Query: "uses", K: -1, Metadata: map[string]string{"kind": "tech", "project": "billing"}})
	if err != nil || len(hits) != 1 || hits[0].Fact.ID != a {
		t.Fatalf("Search with a filter = %+v, %v; want %s", hits, err, a)
	}
	many := map[string]string{}
	for i := range facts.MaxMetadataFilters + 1 {
		many[fmt.Sprint("k", i)] = "v"
	}
	_, err = e.mem.ListFacts(e.ctx, facts.ListRequest{UserID: "u", Metadata: many})
	wantInvalid(t, "too many filters", "metadata", err)
	_, err = e.mem.Search(e.ctx, facts.SearchRequest{UserID: "u", Metadata: map[string]string{"": "v"}})
	wantInvalid(t, "empty filter key", "metadata key", err)
	_, err = e.mem.ListFacts(e.ctx, facts.ListRequest{UserID: "u", Metadata: map[string]string{"k": "bad \xff"}})
	wantInvalid(t, "bad filter value", "metadata.k", err)
}
