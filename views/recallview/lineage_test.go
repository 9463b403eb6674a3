package recallview_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/views/recallview"
)

// With Options.Lineage, a branch's inherited turns are indexed once,
// under the session that logged them, and a search scoped to the branch
// finds them through its lineage: windows and fork chains cross fork
// points, turns the parent logged after the fork stay out, old copies of
// inherited turns are not found twice (a session's own document of a
// turn is its view of it), and when the parent is deleted
// the branch's own copies (handed over by the store) take over; a
// session created later under the parent's ID is no ancestor.
func TestLineage(t *testing.T) {
	ctx := context.Background()
	var tick atomic.Int64
	st := memstore.New(memstore.Options{Clock: func() time.Time { return t0.Add(time.Duration(tick.Add(1)) * time.Second) }})
	if recallview.StoreLineage(store.New(noFeed{st})) != nil {
		t.Error("StoreLineage of a store that does not tell its segments is not nil")
	}
	backend := recall.NewMemory(recall.MemoryOptions{})
	ix := recall.New(backend, recall.Options{Lineage: recallview.StoreLineage(st)})
	f, stop := recallview.Start(st, st, &recallview.Indexer{Index: ix, Store: st}, recallview.FollowerOptions{
		OnError: func(err error) { t.Errorf("indexing: %v", err) },
	})
	defer stop()
	is := st

	msg := func(text string) agentmem.Step {
		return &agentmem.MessageStep{StepInfo: agentmem.StepInfo{ID: agentmem.NewID()}, Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(text)}}
	}
	create := func(id, parent string, forkSeq int64, texts ...string) {
		t.Helper()
		if _, err := is.Create(ctx, store.CreateRequest{ID: id, Tenant: "acme", ParentID: parent, ForkSeq: forkSeq}); err != nil {
			t.Fatal(err)
		}
		for _, text := range texts {
			if _, err := is.Append(ctx, store.AppendRequest{Tenant: "acme", SessionID: id, Steps: []agentmem.Step{msg(text)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	search := func(session, q string, before, after int) []recall.Hit {
		t.Helper()
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		hits, err := ix.Search(ctx, recall.Query{Tenant: "acme", Text: q, K: 10, Filter: recall.Scope(session, "", ""), Before: before, After: after})
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}
	ids := func(docs []recall.Doc) []string {
		out := make([]string, len(docs))
		for i, d := range docs {
			out[i] = d.ID
		}
		return out
	}
	// The hits that hold the word (the others are neighbours, which
	// rank too).
	holding := func(hits []recall.Hit, word string) []string {
		var out []string
		for _, h := range hits {
			if strings.Contains(h.Doc.Text, word) {
				out = append(out, h.Doc.ID)
			}
		}
		slices.Sort(out)
		return out
	}
	expect := func(session, q string, want ...string) {
		t.Helper()
		if got := holding(search(session, q, 0, 0), q); !slices.Equal(got, want) {
			t.Errorf("search %s for %q: %v, want %v", session, q, got, want)
		}
	}

	create("p", "", 0, "alpha apples", "beta bananas", "gamma grapes", "delta dates")
	create("b", "p", 2, "epsilon eggs")  // b: p#1, p#2, then b#3
	create("c", "b", 3, "zeta zucchini") // c: p#1, p#2, b#3, then c#4
	create("d", "p", 0, "eta eggplants") // forked at p's end: p#1-p#4, then d#5

	// Nothing is indexed again for the branches.
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := holding(searchAll(t, ix, "apples"), "apples"); !slices.Equal(got, []string{"p#1"}) {
		t.Errorf("tenant-wide search for apples: %v, want p#1 once", got)
	}
	expect("b", "apples", "p#1")
	expect("b", "grapes")        // logged by p after the fork
	expect("b", "eggs", "b#3")   // the branch's own
	expect("c", "apples", "p#1") // two forks up
	expect("c", "eggs", "b#3")
	expect("c", "zucchini", "c#4")
	expect("d", "apples", "p#1")
	expect("d", "grapes", "p#3")
	expect("p", "eggs") // a parent does not see its branches
	// A window is the branch's conversation across fork points.
	hits := search("c", "eggs", 2, 1)
	if len(hits) == 0 || hits[0].Doc.ID != "b#3" || !slices.Equal(ids(hits[0].Window), []string{"p#1", "p#2", "b#3", "c#4"}) {
		t.Errorf("window around b#3 in c: %+v", hits)
	}
	hits = search("b", "bananas", 0, 2)
	if len(hits) == 0 || hits[0].Doc.ID != "p#2" || !slices.Equal(ids(hits[0].Window), []string{"p#2", "b#3"}) {
		t.Errorf("window around p#2 in b: %+v", hits)
	}
	// An index that copied inherited turns (as before Lineage) does not
	// find them twice: the branch's copy is its turn.
	if err := ix.Upsert(ctx, recall.Doc{ID: "b#1", Tenant: "acme", Text: "alpha apples", Group: "b", Seq: 1, Metadata: map[string]string{recall.MetaSession: "b", recall.MetaStep: "1"}}); err != nil {
		t.Fatal(err)
	}
	expect("b", "apples", "b#1")
	expect("c", "apples", "b#1")
	expect("d", "apples", "p#1")
	hits = search("c", "eggs", 2, 1)
	if len(hits) == 0 || hits[0].Doc.ID != "b#3" || !slices.Equal(ids(hits[0].Window), []string{"b#1", "p#2", "b#3", "c#4"}) {
		t.Errorf("window around b#3 in c, with b's copy of turn 1: %+v", hits)
	}

	// The parent deleted: the store hands its history to b, whose own
	// documents then hold it.
	if err := is.Delete(ctx, "acme", "p"); err != nil {
		t.Fatal(err)
	}
	expect("b", "apples", "b#1")
	expect("b", "bananas", "b#2")
	expect("b", "grapes")
	expect("c", "bananas", "b#2")
	hits = search("c", "eggs", 2, 1)
	if len(hits) == 0 || hits[0].Doc.ID != "b#3" || !slices.Equal(ids(hits[0].Window), []string{"b#1", "b#2", "b#3", "c#4"}) {
		t.Errorf("window around b#3 in c, p deleted: %+v", hits)
	}
	// A new session under the parent's ID is unrelated to b.
	create("p", "", 0, "alpha apples again")
	expect("b", "apples", "b#1")
	expect("p", "apples", "p#1")
}

// searchAll returns the tenant-wide hits for q.
func searchAll(t *testing.T, ix *recall.Index, q string) []recall.Hit {
	t.Helper()
	hits, err := ix.Search(context.Background(), recall.Query{Tenant: "acme", Text: q, K: 20})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// Backfill into an index that follows lineages indexes each session's own
// entries only: a branch's inherited history is its parent's documents.
func TestBackfillFollowsLineage(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	for _, c := range []struct {
		id, parent string
		fork       int64
		n          int
	}{{"p", "", 0, 3}, {"b", "p", 2, 2}} {
		if _, err := st.Create(ctx, store.CreateRequest{ID: c.id, Tenant: "acme", ParentID: c.parent, ForkSeq: c.fork}); err != nil {
			t.Fatal(err)
		}
		for i := range c.n {
			step := &agentmem.MessageStep{StepInfo: agentmem.StepInfo{ID: agentmem.NewID()}, Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("turn " + c.id + string(rune('a'+i)))}}
			if _, err := st.Append(ctx, store.AppendRequest{Tenant: "acme", SessionID: c.id, Steps: []agentmem.Step{step}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, lineage := range []bool{true, false} {
		var opts recall.Options
		want := []string{"b#1", "b#2", "b#3", "b#4", "p#1", "p#2", "p#3"}
		if lineage {
			opts.Lineage = recallview.StoreLineage(st)
			want = []string{"b#3", "b#4", "p#1", "p#2", "p#3"}
		}
		ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), opts)
		n, err := (&recallview.Indexer{Index: ix, Store: st}).Backfill(ctx, store.ListRequest{})
		if err != nil || n != len(want) {
			t.Fatalf("lineage %v: Backfill = %d, %v; want %d documents", lineage, n, err, len(want))
		}
		var got []string
		for _, h := range searchAll(t, ix, "turn") {
			got = append(got, h.Doc.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("lineage %v: indexed %v, want %v", lineage, got, want)
		}
	}
}

// A branch's amendment of a step it inherited (a tool's result for a call
// its parent left pending, sent to the branch) is indexed under the
// branch, at the step's number: a search scoped to the branch, or to a
// branch of it, finds the branch's version of the turn and not the
// parent's, before and after the parent amends the step its own way, and
// after the parent is deleted; the parent's search finds its own.
func TestLineageAmendedInheritedStep(t *testing.T) {
	ctx := context.Background()
	lf := newLineageFixture(t)
	is := lf.is
	msg := func(id, text string) *agentmem.MessageStep {
		return &agentmem.MessageStep{StepInfo: agentmem.StepInfo{ID: id}, Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(text)}}
	}
	appendTo := func(session string, req store.AppendRequest) {
		t.Helper()
		req.Tenant, req.SessionID = "acme", session
		if _, err := is.Append(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	amend := func(session, text string) { t.Helper(); lf.amend(session, "s1", text) }
	expect := func(session, q string, want ...string) {
		t.Helper()
		if got := lf.found(session, q); !slices.Equal(got, want) {
			t.Errorf("search %s for %q: %v, want %v", session, q, got, want)
		}
	}
	for _, c := range []store.CreateRequest{{ID: "q"}} {
		c.Tenant = "acme"
		if _, err := is.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	appendTo("q", store.AppendRequest{Steps: []agentmem.Step{msg("s1", "kappa kiwis"), msg("s2", "lambda lemons")}})
	for _, c := range []store.CreateRequest{{ID: "r", ParentID: "q", ForkSeq: 2}} {
		c.Tenant = "acme"
		if _, err := is.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	amend("r", "kappa kumquats")
	if _, err := is.Create(ctx, store.CreateRequest{Tenant: "acme", ID: "s", ParentID: "r"}); err != nil {
		t.Fatal(err)
	}
	// u, forked from q too, never amends the turn.
	if _, err := is.Create(ctx, store.CreateRequest{Tenant: "acme", ID: "u", ParentID: "q", ForkSeq: 2}); err != nil {
		t.Fatal(err)
	}
	expect("u", "kiwis", "q#1")

	expect("r", "kumquats", "r#1")
	expect("r", "kiwis")
	expect("r", "lemons", "q#2")
	expect("s", "kumquats", "r#1")
	expect("s", "kiwis")
	expect("q", "kumquats")
	expect("q", "kiwis", "q#1")

	// The parent amends the turn its own way: the branch keeps its own,
	// and u, which forked before, does not see the parent's amendment
	// (its version of the turn is gone from the index with it).
	amend("q", "kappa kaki")
	expect("q", "kaki", "q#1")
	expect("r", "kaki")
	expect("r", "kumquats", "r#1")
	expect("s", "kaki")
	expect("u", "kaki")
	expect("u", "lemons", "q#2")

	// A window in the branch takes each turn from the nearest session.
	if err := lf.follow.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	hits, err := lf.ix.Search(ctx, recall.Query{Tenant: "acme", Text: "lemons", K: 1, Filter: recall.Scope("s", "", ""), Before: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || len(hits[0].Window) != 2 || hits[0].Window[0].ID != "r#1" || hits[0].Window[1].ID != "q#2" {
		t.Errorf("window around q#2 in s: %+v", hits)
	}

	// The parent deleted: the store hands its history to r, whose feed
	// then holds r's entries of turns 1 and 2 after its amendment of
	// turn 1. The amendment stays what r's turn 1 is.
	if err := is.Delete(ctx, "acme", "q"); err != nil {
		t.Fatal(err)
	}
	expect("r", "kumquats", "r#1")
	expect("r", "kiwis")
	expect("r", "lemons", "r#2")
	expect("s", "kumquats", "r#1")
	expect("s", "lemons", "r#2")
}

// When a deleted parent hands a branch its history, the parent's
// amendments of a step before the fork come after the branch's own
// amendment of it in the feed: the branch's stays its turn.
func TestLineageHandoverKeepsBranchAmendment(t *testing.T) {
	ctx := context.Background()
	lf := newLineageFixture(t)
	is, amend, found := lf.is, func(session, text string) { t.Helper(); lf.amend(session, "m1", text) }, lf.found
	if _, err := is.Create(ctx, store.CreateRequest{Tenant: "acme", ID: "x"}); err != nil {
		t.Fatal(err)
	}
	m1 := &agentmem.MessageStep{StepInfo: agentmem.StepInfo{ID: "m1"}, Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("mu mangoes")}}
	if _, err := is.Append(ctx, store.AppendRequest{Tenant: "acme", SessionID: "x", Steps: []agentmem.Step{m1}}); err != nil {
		t.Fatal(err)
	}
	amend("x", "mu melons") // entry 2 of x
	if _, err := is.Create(ctx, store.CreateRequest{Tenant: "acme", ID: "y", ParentID: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := found("y", "melons"); !slices.Equal(got, []string{"x#1"}) {
		t.Errorf("y, forked after x's amendment, finds %v for it, want x#1", got)
	}
	amend("y", "mu mulberries") // entry 3 of y
	if got := found("y", "mulberries"); !slices.Equal(got, []string{"y#1"}) {
		t.Errorf("y's amendment: %v, want y#1", got)
	}
	if err := is.Delete(ctx, "acme", "x"); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string][]string{"mulberries": {"y#1"}, "melons": nil, "mangoes": nil} {
		if got := found("y", q); !slices.Equal(got, want) {
			t.Errorf("after x's deletion, y finds %v for %q, want %v", got, q, want)
		}
	}
}

// lineageFixture is a store whose index follows lineages, for the tests
// of amended turns: tenant "acme", message steps.
type lineageFixture struct {
	t      *testing.T
	is     *store.Store
	follow *recallview.Follower
	ix     *recall.Index
}

func newLineageFixture(t *testing.T) *lineageFixture {
	st := memstore.New(memstore.Options{})
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{Lineage: recallview.StoreLineage(st)})
	f, stop := recallview.Start(st, st, &recallview.Indexer{Index: ix, Store: st}, recallview.FollowerOptions{
		OnError: func(err error) { t.Errorf("indexing: %v", err) },
	})
	t.Cleanup(stop)
	return &lineageFixture{t: t, is: st, follow: f, ix: ix}
}

// amend replaces turn 1 of session (its step stepID) by a copy with text.
func (f *lineageFixture) amend(session, stepID, text string) {
	f.t.Helper()
	c := &agentmem.MessageStep{StepInfo: agentmem.StepInfo{ID: stepID, Number: 1}, Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(text)}}
	if _, err := f.is.Append(context.Background(), store.AppendRequest{Tenant: "acme", SessionID: session, Compaction: &store.CompactionRecord{Amend: true, Replaced: []agentmem.Step{c}}}); err != nil {
		f.t.Fatal(err)
	}
}

// found returns the IDs of the hits holding q of a search scoped to
// session, once the index has every write.
func (f *lineageFixture) found(session, q string) []string {
	f.t.Helper()
	ctx := context.Background()
	if err := f.follow.Sync(ctx); err != nil {
		f.t.Fatal(err)
	}
	hits, err := f.ix.Search(ctx, recall.Query{Tenant: "acme", Text: q, K: 10, Filter: recall.Scope(session, "", "")})
	if err != nil {
		f.t.Fatal(err)
	}
	var ids []string
	for _, h := range hits {
		if strings.Contains(h.Doc.Text, q) {
			ids = append(ids, h.Doc.ID)
		}
	}
	return ids
}
