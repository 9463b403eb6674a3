package bundle_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
	blockpg "github.com/agentmem/agentmem/blocks/postgres"
	blocksqlite "github.com/agentmem/agentmem/blocks/sqlite"
	"github.com/agentmem/agentmem/bundle"
	"github.com/agentmem/agentmem/facts"
	factpg "github.com/agentmem/agentmem/facts/postgres"
	factsqlite "github.com/agentmem/agentmem/facts/sqlite"
	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/recall"
	recallpg "github.com/agentmem/agentmem/recall/postgres"
	recallsqlite "github.com/agentmem/agentmem/recall/sqlite"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	pgstore "github.com/agentmem/agentmem/store/postgres"
	sqlitestore "github.com/agentmem/agentmem/store/sqlite"
	"github.com/agentmem/agentmem/views/recallview"
)

var (
	ctx = context.Background()
	t0  = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
)

// clock is a manual clock for the stores.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }
func (c *clock) tick() time.Time {
	c.now = c.now.Add(time.Second)
	return c.now
}

// opener opens a new, empty set of stores, closed when the test ends,
// whose session store reads the clock (the other stores are given their
// times).
type opener func(t *testing.T, c *clock) bundle.Stores

func memStores(t *testing.T, c *clock) bundle.Stores {
	st := memstore.New(memstore.Options{Clock: c.Now})
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	fs, bs := facts.NewMemStore(), blocks.NewMemStore()
	t.Cleanup(func() { st.Close(); ix.Close(); fs.Close(); bs.Close() })
	return bundle.Stores{Sessions: st, Facts: fs, Blocks: bs, Recall: ix}
}

func sqliteStores(t *testing.T, c *clock) bundle.Stores {
	path := filepath.Join(t.TempDir(), "agentmem.db")
	st, err := sqlitestore.Open(ctx, path, sqlitestore.Options{Clock: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := factsqlite.Open(ctx, path, factsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bs, err := blocksqlite.Open(ctx, path, blocksqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := recallsqlite.Open(ctx, path, recallsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ix := recall.New(rb, recall.Options{})
	t.Cleanup(func() { st.Close(); ix.Close(); fs.Close(); bs.Close() })
	return bundle.Stores{Sessions: st, Facts: fs, Blocks: bs, Recall: ix}
}

// postgresStores opens the stores in a new schema of the test database;
// the test is skipped without one (see internal/testenv).
func postgresStores(t *testing.T, c *clock) bundle.Stores {
	url := testenv.PostgresURL(t)
	schema := testenv.FreshSchema(t, url)
	st, err := pgstore.Open(ctx, url, pgstore.Options{Schema: schema, Clock: c.Now, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := factpg.Open(ctx, url, factpg.Options{Schema: schema, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	bs, err := blockpg.Open(ctx, url, blockpg.Options{Schema: schema, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := recallpg.Open(ctx, url, recallpg.Options{Schema: schema, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	ix := recall.New(rb, recall.Options{})
	t.Cleanup(func() { st.Close(); ix.Close(); fs.Close(); bs.Close() })
	return bundle.Stores{Sessions: st, Facts: fs, Blocks: bs, Recall: ix}
}

var backends = map[string]opener{"memory": memStores, "sqlite": sqliteStores, "postgres": postgresStores}

// seed fills the stores with every kind of record and history:
//   - sessions s1 (alice, agent coder: steps, a compaction), s2 (bob), a
//     branch s3 of s1 (alice), and s1 of tenant acme (carol);
//   - blocks: s1's "task" (three versions), alice's "log" (more changes
//     than a history keeps), bob's "human", carol's "notes" in acme;
//   - facts: alice's (superseded, edited, forgotten, with a validity in
//     the past, a source, metadata, an embedding), bob's, carol's in acme,
//     and dave's audit log alone (a forgotten user);
//   - recall documents put by callers (alice's note with a vector, a
//     shared one, acme's), and s1's step documents, as indexing makes
//     them.
func seed(t *testing.T, s bundle.Stores, c *clock) {
	t.Helper()
	st := s.Sessions
	mustCreate := func(req store.CreateRequest) {
		t.Helper()
		if _, err := st.Create(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	mustAppend := func(req store.AppendRequest) {
		t.Helper()
		c.tick()
		if _, err := st.Append(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	info := func(id string) agentmem.StepInfo { return agentmem.StepInfo{ID: id} }
	action := func(id, result string) *agentmem.ActionStep {
		return &agentmem.ActionStep{StepInfo: info(id), Thought: "look",
			ToolCalls: []agentmem.ToolCall{{ID: "c-" + id, Name: "read_file", Arguments: `{"path":"main.go"}`}},
			Results:   []agentmem.ToolResult{{CallID: "c-" + id, Content: result}}}
	}
	mustCreate(store.CreateRequest{ID: "s1", UserID: "alice", Agent: "coder", Metadata: map[string]string{"project": "billing"}})
	big := action("a2", strings.Repeat("orders table locked; ", 30))
	mustAppend(store.AppendRequest{SessionID: "s1", Steps: []agentmem.Step{
		&agentmem.SystemPromptStep{StepInfo: info("sys"), Content: "Be careful."},
		&agentmem.TaskStep{StepInfo: info("task"), Task: "Find why the staging deploy failed — café"},
		action("a1", "package main"), big,
	}})
	mustAppend(store.AppendRequest{SessionID: "s1",
		Steps:      []agentmem.Step{&agentmem.SummaryStep{StepInfo: info("sum"), Summary: "Read main.go.", Covers: []agentmem.Range{{From: 3, To: 3}}}},
		Compaction: &store.CompactionRecord{Working: []int64{1, 2, store.NewStepRef(0), 4}, Replaced: []agentmem.Step{store.WithNumber(big.Truncate(40), 4)}, Removed: []int64{3}}})
	mustCreate(store.CreateRequest{ID: "s2", UserID: "bob", Agent: "helper", Retention: store.Persistent})
	mustAppend(store.AppendRequest{SessionID: "s2", Steps: []agentmem.Step{&agentmem.TaskStep{StepInfo: info("t"), Task: "What is 2+2?"}, &agentmem.FinalAnswerStep{StepInfo: info("f"), Answer: "4"}}})
	mustCreate(store.CreateRequest{ID: "s3", UserID: "alice", Agent: "coder", ParentID: "s1", ForkSeq: 3})
	mustAppend(store.AppendRequest{SessionID: "s3", Steps: []agentmem.Step{action("b1", "3 commits")}})
	mustCreate(store.CreateRequest{ID: "s1", Tenant: "acme", UserID: "carol"})
	mustAppend(store.AppendRequest{Tenant: "acme", SessionID: "s1", Steps: []agentmem.Step{&agentmem.TaskStep{StepInfo: info("t"), Task: "Plan the offsite"}}})

	bm := blocks.New(s.Blocks, blocks.Options{Clock: c.tick})
	set := func(k blocks.Key, v string) {
		t.Helper()
		if _, err := bm.Set(ctx, blocks.SetRequest{Key: k, Value: v, Limit: 500, Edit: blocks.Edit{By: "api"}}); err != nil {
			t.Fatal(err)
		}
	}
	task := blocks.Key{Owner: blocks.Session("s1"), Label: "task"}
	set(task, "Find the bug.")
	if _, err := bm.Append(ctx, task, "It is in billing.", blocks.Edit{By: "coder"}); err != nil {
		t.Fatal(err)
	}
	if _, err := bm.Replace(ctx, task, "billing", "orders", blocks.Edit{By: "coder"}); err != nil {
		t.Fatal(err)
	}
	for i := range blocks.MaxHistory + 3 {
		set(blocks.Key{Owner: blocks.User("alice"), Label: "log"}, fmt.Sprint("entry ", i))
	}
	if _, err := bm.Set(ctx, blocks.SetRequest{Key: blocks.Key{Owner: blocks.User("bob"), Label: "human"}, Value: "Bob, 40.", Description: ptr("who Bob is"), ReadOnly: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	set(blocks.Key{Tenant: "acme", Owner: blocks.User("carol"), Label: "notes"}, "Likes lists.")

	fm := facts.New(s.Facts, facts.Options{Clock: c.tick})
	remember := func(tenant, user, text string) facts.Fact {
		t.Helper()
		r, err := fm.Remember(ctx, facts.RememberRequest{Tenant: tenant, UserID: user, Text: text, Confidence: 0.7})
		if err != nil {
			t.Fatal(err)
		}
		return r.Fact
	}
	berlin := remember("", "alice", "Lives in Berlin.")
	if _, err := fm.Supersede(ctx, facts.SupersedeRequest{ID: berlin.ID, Text: "Lives in Paris.", By: "coder", Reason: "moved"}); err != nil {
		t.Fatal(err)
	}
	cat := remember("", "alice", "Has a cat.")
	if _, err := fm.Edit(ctx, facts.EditRequest{ID: cat.ID, Text: ptr("Has a cat named Tom."), Metadata: map[string]*string{"pet": ptr("cat")}}); err != nil {
		t.Fatal(err)
	}
	if err := fm.Forget(ctx, "", remember("", "alice", "Likes jazz.").ID, "user:alice", "private"); err != nil {
		t.Fatal(err)
	}
	if _, err := fm.Remember(ctx, facts.RememberRequest{UserID: "alice", Text: "Worked at Initech.", Confidence: 0.9, Source: facts.Source{SessionID: "s1", StepSeq: 2, Agent: "coder"},
		ValidFrom: t0.Add(-400 * 24 * time.Hour), ValidTo: t0.Add(-30 * 24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Facts.Update(ctx, "", "alice", func(cur []facts.Fact) (facts.Changes, error) {
		f := cur[len(cur)-1]
		f.Embedding = []float32{0.25, -1.5, 3e-7}
		return facts.Changes{Put: []facts.Fact{f}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	// A turn extracted once: its record is in the audit log.
	dutch := facts.ExtractorFunc(func(context.Context, facts.ExtractRequest) ([]facts.Decision, error) {
		return []facts.Decision{{Op: facts.OpAdd, Text: "Speaks Dutch."}}, nil
	})
	if _, err := fm.Extract(ctx, dutch, facts.Turn{UserID: "alice", Source: facts.Source{SessionID: "s1", StepSeq: 4, Agent: "coder"}, Once: true,
		Messages: []agentmem.Message{{Role: agentmem.RoleUser, Content: agentmem.Text("Ik spreek Nederlands.")}}}); err != nil {
		t.Fatal(err)
	}
	remember("", "bob", "Plays chess.")
	remember("acme", "carol", "Runs the offsite.")
	remember("", "dave", "Owns a boat.")
	if _, err := fm.ForgetUser(ctx, "", "dave", "op", "erasure request"); err != nil {
		t.Fatal(err)
	}

	if err := s.Recall.Upsert(ctx,
		recall.Doc{ID: "note-1", Text: "Alice prefers the blue deployment dashboard", Metadata: map[string]string{recall.MetaUser: "alice", "source": "crm"},
			Time: t0.Add(1500 * time.Nanosecond), Group: "notes", Seq: 7, Embedding: []float32{1, 0, -0.5}, EmbeddingModel: "m1"},
		recall.Doc{ID: "kb-1", Text: "The staging cluster restarts nightly"},
		// A caller's document that names a session is the caller's.
		recall.Doc{ID: "s1-note", Text: "Remember the rollback plan", Metadata: map[string]string{recall.MetaSession: "s1", recall.MetaUser: "alice"}},
	); err != nil {
		t.Fatal(err)
	}
	if err := s.Recall.Upsert(ctx, recall.Doc{ID: "acme-1", Tenant: "acme", Text: "Offsite in Lisbon", Metadata: map[string]string{recall.MetaUser: "carol"}}); err != nil {
		t.Fatal(err)
	}
	resp, err := st.Read(ctx, store.ReadRequest{SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range resp.Entries {
		if err := s.Recall.Upsert(ctx, recallview.StepDocs(resp.Session, e)...); err != nil {
			t.Fatal(err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// export writes the bundle of sel, with a fixed clock.
func export(t *testing.T, s bundle.Stores, sel bundle.Selection) (string, bundle.ExportSummary) {
	t.Helper()
	var b bytes.Buffer
	sum, err := bundle.Export(ctx, s, sel, &b, bundle.ExportOptions{Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatalf("Export(%+v): %v", sel, err)
	}
	if sum.Bytes != int64(b.Len()) || len(sum.Damaged) != 0 {
		t.Fatalf("Export: %d bytes of %d, damaged %v", sum.Bytes, b.Len(), sum.Damaged)
	}
	return b.String(), sum
}

// importAll imports data and returns the results.
func importAll(t *testing.T, s bundle.Stores, r io.Reader, opts bundle.ImportOptions) ([]bundle.Result, bundle.Summary, error) {
	t.Helper()
	var out []bundle.Result
	sum, err := bundle.Import(ctx, s, r, opts, func(r bundle.Result) error {
		out = append(out, r)
		return nil
	})
	return out, sum, err
}

// tenants are the tenants of the seed.
var tenants = []string{"", "acme"}

// same fails t unless dst holds what src does, in the given tenants of
// src and dst: every session and its log, every block and its history,
// every user's facts and audit log, and every document but those derived
// from sessions (which dst does not index here).
func same(t *testing.T, src, dst bundle.Stores, srcTenant, dstTenant string) {
	t.Helper()
	// Sessions, through their export: metadata, times, entries.
	list := func(st *store.Store, tenant string) []string {
		resp, err := st.List(ctx, store.ListRequest{Tenant: tenant, ExactTenant: true, PageSize: store.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range resp.Sessions {
			ids = append(ids, s.ID)
		}
		slices.Sort(ids)
		return ids
	}
	ids := list(src.Sessions, srcTenant)
	if got := list(dst.Sessions, dstTenant); !slices.Equal(got, ids) {
		t.Fatalf("sessions %q, want %q", got, ids)
	}
	for _, id := range ids {
		var a, b bytes.Buffer
		if err := store.Export(ctx, src.Sessions, srcTenant, id, &a); err != nil {
			t.Fatal(err)
		}
		if err := store.Export(ctx, dst.Sessions, dstTenant, id, &b); err != nil {
			t.Fatal(err)
		}
		want := strings.Replace(a.String(), `"tenant":"`+srcTenant+`",`, "", 1)
		got := strings.Replace(b.String(), `"tenant":"`+dstTenant+`",`, "", 1)
		if got != want {
			t.Fatalf("session %s:\n%s\nwant\n%s", id, got, want)
		}
	}
	// Blocks, with their histories.
	owners := func(s bundle.Stores, tenant string) []blocks.Owner {
		os, err := s.Blocks.(blocks.Lister).Owners(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		return os
	}
	os := owners(src, srcTenant)
	if got := owners(dst, dstTenant); !reflect.DeepEqual(got, os) {
		t.Fatalf("block owners %v, want %v", got, os)
	}
	for _, o := range os {
		a, _ := src.Blocks.List(ctx, srcTenant, o)
		b, _ := dst.Blocks.List(ctx, dstTenant, o)
		if len(a) != len(b) {
			t.Fatalf("%s: %d blocks, want %d", o, len(b), len(a))
		}
		for i := range a {
			bb := b[i]
			bb.Tenant = srcTenant
			if !reflect.DeepEqual(bb, a[i]) {
				t.Fatalf("block %s of %s:\n%+v\nwant\n%+v", a[i].Label, o, bb, a[i])
			}
			ha, _ := src.Blocks.History(ctx, a[i].Key)
			hb, _ := dst.Blocks.History(ctx, b[i].Key)
			if len(ha) == 0 || !reflect.DeepEqual(ha, hb) {
				t.Fatalf("history of %s of %s:\n%+v\nwant\n%+v", a[i].Label, o, hb, ha)
			}
		}
	}
	// Facts, with their audit logs.
	users := func(s bundle.Stores, tenant string) []string {
		us, err := s.Facts.(facts.Lister).Users(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		return us
	}
	us := users(src, srcTenant)
	if got := users(dst, dstTenant); !slices.Equal(got, us) {
		t.Fatalf("users with facts %q, want %q", got, us)
	}
	for _, u := range us {
		a, _ := src.Facts.Facts(ctx, srcTenant, u)
		b, _ := dst.Facts.Facts(ctx, dstTenant, u)
		for i := range b {
			b[i].Tenant = srcTenant
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("facts of %s:\n%+v\nwant\n%+v", u, b, a)
		}
		aa, _ := src.Facts.Audit(ctx, srcTenant, u)
		ab, _ := dst.Facts.Audit(ctx, dstTenant, u)
		if len(aa) == 0 && len(a) == 0 || len(aa) != len(ab) {
			t.Fatalf("audit of %s: %d entries, want %d", u, len(ab), len(aa))
		}
		for i := range aa {
			x, y := aa[i], ab[i]
			if i > 0 && y.Seq <= ab[i-1].Seq {
				t.Fatalf("audit of %s out of order", u)
			}
			x.Seq, y.Seq, y.Tenant = 0, 0, srcTenant
			if !reflect.DeepEqual(x, y) {
				t.Fatalf("audit entry %d of %s:\n%+v\nwant\n%+v", i, u, y, x)
			}
		}
	}
	// Documents, but those derived from sessions.
	docs := func(s bundle.Stores, tenant string) []recall.Doc {
		ds, err := s.Recall.Scan(ctx, tenant, recall.Filter{}, "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		ds = slices.DeleteFunc(ds, recallview.IsStepDoc)
		for i := range ds {
			ds[i].Tenant = ""
		}
		return ds
	}
	want := docs(src, srcTenant)
	if got := docs(dst, dstTenant); len(want) == 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("documents:\n%+v\nwant\n%+v", got, want)
	}
}

// A bundle of everything imports into new stores exactly, and exports
// from them byte for byte as it was; the imported documents are found by
// a search; the derived documents are not in the bundle.
func TestRoundTrip(t *testing.T) {
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			c := &clock{now: t0}
			src := open(t, c)
			seed(t, src, c)
			data, sum := export(t, src, bundle.Selection{All: true})
			want := bundle.Counts{Sessions: 4, Entries: 13, Blocks: 4, Changes: 3 + blocks.MaxHistory + 1 + 1, Users: 4, Facts: 5 + 1 + 1, Audit: 10 + 1 + 1 + 2, Documents: 4}
			if sum.Counts != want {
				t.Errorf("counts %+v, want %+v", sum.Counts, want)
			}
			if strings.Contains(data, `"id":"s1#`) {
				t.Errorf("the bundle holds documents derived from sessions:\n%s", data)
			}

			dst := open(t, &clock{now: t0.Add(time.Hour)})
			res, isum, err := importAll(t, dst, strings.NewReader(data), bundle.ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if isum.Failed+isum.Skipped != 0 || isum.Sessions != 4 || isum.Entries != 13 || isum.Blocks != 4 || isum.Users != 4 || isum.Documents != 4 || len(res) != isum.Total() || isum.Version != 2 {
				t.Fatalf("import summary %+v, results %+v", isum, res)
			}
			for _, tenant := range tenants {
				same(t, src, dst, tenant, tenant)
			}
			// The turn extracted before the export is not extracted again
			// after the import.
			if ok, err := dst.Facts.(facts.Extractions).Extracted(ctx, "", "alice", "s1", 4); err != nil || !ok {
				t.Fatalf("the turn extracted is not recorded after the import: %v, %v", ok, err)
			}
			if again, _ := export(t, dst, bundle.Selection{All: true}); again != data {
				t.Fatalf("the imported stores export differently:\n%s\nwant\n%s", again, data)
			}
			hits, err := dst.Recall.Search(ctx, recall.Query{Text: "blue dashboard", K: 3})
			if err != nil || len(hits) == 0 || hits[0].Doc.ID != "note-1" {
				t.Fatalf("search after import: %+v, %v", hits, err)
			}
		})
	}
}

// An import of what is there already refuses every record, each
// reported, and changes nothing; with ConflictSkip, a second run of an
// import skips what the first did, so it is idempotent.
func TestImportTwice(t *testing.T) {
	c := &clock{now: t0}
	src := memStores(t, c)
	seed(t, src, c)
	data, _ := export(t, src, bundle.Selection{All: true})
	dst := memStores(t, c)
	if _, _, err := importAll(t, dst, strings.NewReader(data), bundle.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	res, sum, err := importAll(t, dst, strings.NewReader(data), bundle.ImportOptions{})
	if err != nil || sum.Failed != 16 || sum.Total() != 16 {
		t.Fatalf("again: %+v, %v", sum, err)
	}
	for _, r := range res {
		if r.Status != bundle.Failed || !strings.Contains(r.Error, "conflict") && !strings.Contains(r.Error, "in use") && !strings.Contains(r.Error, "was not imported") {
			t.Errorf("again: %+v", r)
		}
	}
	res, sum, err = importAll(t, dst, strings.NewReader(data), bundle.ImportOptions{OnConflict: bundle.ConflictSkip})
	if err != nil || sum.Skipped != 16 || sum.Failed != 0 {
		t.Fatalf("again, skipping: %+v, %v: %+v", sum, err, res)
	}
	for _, tenant := range tenants {
		same(t, src, dst, tenant, tenant)
	}
}

// --tenant puts every record into one tenant; --new-ids gives sessions
// new IDs, and their blocks follow them.
func TestImportRetarget(t *testing.T) {
	c := &clock{now: t0}
	src := memStores(t, c)
	seed(t, src, c)
	data, _ := export(t, src, bundle.Selection{All: true, ExactTenant: true})
	dst := memStores(t, c)
	res, sum, err := importAll(t, dst, strings.NewReader(data), bundle.ImportOptions{Tenant: "globex"})
	if err != nil || sum.Failed != 0 || sum.Sessions != 3 {
		t.Fatalf("import into globex: %+v, %v", sum, err)
	}
	for _, r := range res {
		if r.Tenant != "globex" {
			t.Errorf("%+v, want it in globex", r)
		}
	}
	same(t, src, dst, "", "globex")
	for _, tenant := range tenants {
		if ts, _ := dst.Facts.(facts.Lister).Tenants(ctx); !slices.Equal(ts, []string{"globex"}) {
			t.Fatalf("facts in tenants %q", ts)
		}
		if ds, _ := dst.Recall.Scan(ctx, tenant, recall.Filter{}, "", 10); len(ds) != 0 {
			t.Fatalf("documents left in tenant %q: %+v", tenant, ds)
		}
	}

	// New IDs: the session's blocks are the new session's.
	res, sum, err = importAll(t, dst, strings.NewReader(data), bundle.ImportOptions{Tenant: "globex", NewIDs: true, OnConflict: bundle.ConflictSkip})
	if err != nil || sum.Sessions != 3 || sum.Blocks != 1 || sum.Skipped != 3+2+3 {
		t.Fatalf("new IDs: %+v, %v: %+v", sum, err, res)
	}
	var s1 string
	for _, r := range res {
		if r.Kind == bundle.KindSession && r.SourceID == "s1" {
			s1 = r.ID
		}
	}
	b, err := dst.Blocks.Get(ctx, blocks.Key{Tenant: "globex", Owner: blocks.Session(s1), Label: "task"})
	if err != nil || s1 == "s1" || b.Version != 3 {
		t.Fatalf("the block of s1's copy %s: %+v, %v", s1, b, err)
	}
}

// A bundle of a newer version is refused whole, with a *VersionError.
func TestImportNewerVersion(t *testing.T) {
	c := &clock{now: t0}
	dst := memStores(t, c)
	in := `{"agentmem_export":3,"bundle":{"something":"new"}}` + "\n" + `{"session":{"id":"x"}}` + "\n"
	_, _, err := importAll(t, dst, strings.NewReader("\n"+in), bundle.ImportOptions{})
	var ve *bundle.VersionError
	if !errors.As(err, &ve) || ve.Version != 3 || !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "newer than this build reads") {
		t.Fatalf("Import of version 3 = %v, want a *VersionError", err)
	}
}

// The version 1 fixture, sessions only, as agentmem export wrote them
// before bundles, still imports.
func TestImportVersion1(t *testing.T) {
	c := &clock{now: t0}
	dst := memStores(t, c)
	f, err := os.Open("testdata/v1/sessions.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, sum, err := importAll(t, dst, f, bundle.ImportOptions{})
	if err != nil || sum.Version != 1 || sum.Sessions != 3 || sum.Entries != 15 || sum.Failed != 0 || len(res) != 3 {
		t.Fatalf("import of version 1: %+v, %v: %+v", sum, err, res)
	}
	for _, r := range res {
		if r.Kind != bundle.KindSession || r.Status != bundle.Imported {
			t.Errorf("%+v", r)
		}
	}
	if sum.Text() != "3 sessions imported (15 entries), 0 failed, 0 skipped" {
		t.Errorf("summary %q", sum.Text())
	}
}

// pipe hides a reader's Seek, as standard input from a pipe has none.
type pipe struct{ io.Reader }

// A bundle that is bad anywhere, or cut short, imports nothing, read
// from a file or from a pipe: the error names the line.
func TestImportBadBundleWritesNothing(t *testing.T) {
	c := &clock{now: t0}
	src := memStores(t, c)
	seed(t, src, c)
	data, _ := export(t, src, bundle.Selection{All: true})
	lines := strings.SplitAfter(data, "\n")
	n := len(lines) - 1 // the last is empty
	lineOf := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return i + 1
			}
		}
		t.Fatalf("no line %s", prefix)
		return 0
	}
	with := func(i int, l string) string {
		out := slices.Clone(lines)
		out[i-1] = l
		return strings.Join(out, "")
	}
	swap := func(i int) string {
		out := slices.Clone(lines)
		out[i-1], out[i] = out[i], out[i-1]
		return strings.Join(out, "")
	}
	lastFact := lineOf(`{"facts":{"user_id":"bob"}}`) + 1
	record := lineOf(`{"audit":{"action":"extracted"`)
	for name, tc := range map[string]struct {
		in   string
		line int
		msg  string
	}{
		"cut short":                  {strings.Join(lines[:n-1], ""), n, "cut short"},
		"cut in a line":              {data[:len(data)-30], n, "malformed JSON"},
		"counts changed":             {with(n, `{"end":{"sessions":4}}`+"\n"), n, "was cut or changed"},
		"a line dropped":             {with(lastFact, ""), n - 1, "was cut or changed"},
		"an empty line":              {with(lastFact, "\n"), lastFact, "is empty"},
		"a bad fact":                 {with(lastFact, strings.Replace(lines[lastFact-1], `"confidence":0.7`, `"confidence":7`, 1)), lastFact, "confidence"},
		"a fact after audit":         {swap(lastFact), lastFact + 1, "a fact after audit entries"},
		"an unknown kind":            {with(5, `{"memo":{}}`+"\n"), 5, "memo is an unknown member"},
		"two kinds":                  {with(5, `{"fact":{},"audit":{}}`+"\n"), 5, "holds 2 records"},
		"an entry astray":            {with(lineOf(`{"facts"`), lines[2]), lineOf(`{"facts"`), "out of place"},
		"a line after end":           {data + "{}\n", n + 1, "holds 0 records"},
		"a bad block history":        {with(lineOf(`{"change"`), strings.Replace(lines[lineOf(`{"change"`)-1], `"version":1`, `"version":9`, 1)), lineOf(`{"change"`), "history[0].version"},
		"a bad entry":                {with(3, strings.Replace(lines[2], `"seq":1`, `"seq":0`, 1)), 3, "entries[0].seq"},
		"a bad document":             {with(lineOf(`{"document"`), `{"document":{"id":"","text":"x"}}`+"\n"), lineOf(`{"document"`), "id"},
		"a turn without its session": {with(record, strings.Replace(lines[record-1], `"session_id":"s1",`, ``, 1)), record, "audit.session_id: is required"},
		"a turn twice":               {with(record-1, lines[record-1]), record, "recorded as extracted twice"},
		"a bad header":               {with(1, `{"agentmem_export":2,"bundle":{"exported_at":"2026-01-01T00:00:00Z","extra":1}}`+"\n"), 1, "bundle.extra is an unknown member"},
	} {
		for _, seekable := range []bool{true, false} {
			dst := memStores(t, c)
			var in io.Reader = strings.NewReader(tc.in)
			if !seekable {
				in = pipe{in}
			}
			res, _, err := importAll(t, dst, in, bundle.ImportOptions{TempDir: t.TempDir()})
			if !errors.Is(err, agentmem.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("line %d", tc.line)) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%s (seekable %v): %v; want line %d and %q", name, seekable, err, tc.line, tc.msg)
			}
			if len(res) != 0 {
				t.Errorf("%s: %d results", name, len(res))
			}
			empty(t, dst)
		}
	}
}

// empty fails t unless the stores hold nothing.
func empty(t *testing.T, s bundle.Stores) {
	t.Helper()
	resp, err := s.Sessions.List(ctx, store.ListRequest{})
	if err != nil || len(resp.Sessions) != 0 {
		t.Fatalf("sessions: %d, %v", len(resp.Sessions), err)
	}
	if ts, err := s.Facts.(facts.Lister).Tenants(ctx); err != nil || len(ts) != 0 {
		t.Fatalf("facts in tenants %q, %v", ts, err)
	}
	if ts, err := s.Blocks.(blocks.Lister).Tenants(ctx); err != nil || len(ts) != 0 {
		t.Fatalf("blocks in tenants %q, %v", ts, err)
	}
	if ts, err := s.Recall.Backend().Tenants(ctx); err != nil || len(ts) != 0 {
		t.Fatalf("documents in tenants %q, %v", ts, err)
	}
}

// A user's bundle holds what forget.User would erase of the user but the
// derived documents: the user's sessions with their blocks, facts, blocks
// and documents; an agent's and named sessions come with their blocks
// alone.
func TestExportSelection(t *testing.T) {
	c := &clock{now: t0}
	src := memStores(t, c)
	seed(t, src, c)
	for _, tc := range []struct {
		sel  bundle.Selection
		want bundle.Counts
		has  []string
	}{
		{bundle.Selection{UserID: "alice"}, bundle.Counts{Sessions: 2, Entries: 10, Blocks: 2, Changes: 3 + blocks.MaxHistory, Users: 1, Facts: 5, Audit: 10, Documents: 2},
			[]string{`"id":"note-1"`, `"id":"s1-note"`, `"owner_id":"alice"`, `"text":"Worked at Initech."`}},
		{bundle.Selection{UserID: "carol", Tenant: "acme"}, bundle.Counts{Sessions: 1, Entries: 1, Blocks: 1, Changes: 1, Users: 1, Facts: 1, Audit: 1, Documents: 1},
			[]string{`"tenant":"acme"`, `"id":"acme-1"`}},
		{bundle.Selection{UserID: "dave"}, bundle.Counts{Users: 1, Audit: 2}, []string{`"action":"forgotten"`}},
		{bundle.Selection{Agent: "coder"}, bundle.Counts{Sessions: 2, Entries: 10, Blocks: 1, Changes: 3}, nil},
		{bundle.Selection{UserID: "alice", Agent: "coder"}, bundle.Counts{Sessions: 2, Entries: 10, Blocks: 1, Changes: 3}, nil},
		{bundle.Selection{Sessions: []string{"s2", "s2"}}, bundle.Counts{Sessions: 1, Entries: 2}, []string{`"id":"s2"`}},
		{bundle.Selection{All: true, Tenant: "acme"}, bundle.Counts{Sessions: 1, Entries: 1, Blocks: 1, Changes: 1, Users: 1, Facts: 1, Audit: 1, Documents: 1}, nil},
	} {
		data, sum := export(t, src, tc.sel)
		if sum.Counts != tc.want {
			t.Errorf("%+v: %+v, want %+v", tc.sel, sum.Counts, tc.want)
		}
		for _, h := range tc.has {
			if !strings.Contains(data, h) {
				t.Errorf("%+v: the bundle lacks %s", tc.sel, h)
			}
		}
		// Every bundle imports whole.
		if _, isum, err := importAll(t, memStores(t, c), strings.NewReader(data), bundle.ImportOptions{}); err != nil || isum.Failed != 0 {
			t.Errorf("%+v: import: %+v, %v", tc.sel, isum, err)
		}
	}
	var b bytes.Buffer
	for _, sel := range []bundle.Selection{{}, {Sessions: []string{"s1"}, All: true}} {
		if _, err := bundle.Export(ctx, src, sel, &b, bundle.ExportOptions{}); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("Export(%+v) = %v, want ErrInvalid", sel, err)
		}
	}
	if _, err := bundle.Export(ctx, src, bundle.Selection{Sessions: []string{"s1", "nope"}}, &b, bundle.ExportOptions{}); !errors.Is(err, agentmem.ErrNotFound) || b.Len() != 0 {
		t.Errorf("Export of a missing session = %v, wrote %d bytes", err, b.Len())
	}
}

// Progress tells each part of an export, and each pass of an import.
func TestProgress(t *testing.T) {
	c := &clock{now: t0}
	src := memStores(t, c)
	seed(t, src, c)
	var parts []string
	var b bytes.Buffer
	if _, err := bundle.Export(ctx, src, bundle.Selection{All: true}, &b, bundle.ExportOptions{Progress: func(p bundle.ExportProgress) {
		if p.Done == 0 {
			parts = append(parts, fmt.Sprintf("%s/%d", p.Part, p.Total))
		}
	}}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"session/4", "facts/4", "block/3", "document/-1"}; !slices.Equal(parts, want) {
		t.Errorf("export parts %q, want %q", parts, want)
	}
	read := map[bundle.Phase]int64{}
	if _, _, err := importAll(t, memStores(t, c), pipe{bytes.NewReader(b.Bytes())}, bundle.ImportOptions{Progress: func(p bundle.Phase, n int64) { read[p] = n }}); err != nil {
		t.Fatal(err)
	}
	if read[bundle.Checking] != int64(b.Len()) || read[bundle.Importing] != int64(b.Len()) {
		t.Errorf("import progress %v, want %d bytes in each pass", read, b.Len())
	}
}

var update = flag.Bool("update", false, "write testdata/bundle.jsonl from the seed")

// The checked-in bundle imports, into every backend, and exports again
// byte for byte: the format this version writes stays readable, and
// Import restores all of it. (go test -update writes it anew from the
// seed.)
func TestGolden(t *testing.T) {
	const golden = "testdata/bundle.jsonl"
	if *update {
		c := &clock{now: t0}
		src := memStores(t, c)
		seed(t, src, c)
		data, _ := export(t, src, bundle.Selection{All: true})
		if err := os.WriteFile(golden, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			dst := open(t, &clock{now: t0})
			if _, sum, err := importAll(t, dst, bytes.NewReader(want), bundle.ImportOptions{}); err != nil || sum.Failed != 0 || sum.Sessions != 4 {
				t.Fatalf("import: %+v, %v", sum, err)
			}
			if got, _ := export(t, dst, bundle.Selection{All: true}); got != string(want) {
				t.Fatalf("export after import:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// lists adds a session to what a store lists that is gone when it is
// read, and fails the read of another: a session deleted since it was
// listed, and a disk that fails.
type lists struct {
	store.Driver
	gone, failing string
}

func (l lists) List(ctx context.Context, req store.ListRequest) (*store.ListResponse, error) {
	resp, err := l.Driver.List(ctx, req)
	if err == nil && req.PageToken == "" {
		resp.Sessions = append([]*store.Session{{ID: l.gone}}, resp.Sessions...)
	}
	return resp, err
}

func (l lists) Read(ctx context.Context, req store.ReadRequest) (*store.ReadResponse, error) {
	if req.SessionID == l.failing {
		return nil, errors.New("disk on fire")
	}
	return l.Driver.Read(ctx, req)
}

// A selected session deleted while the export runs is left out; a read
// that fails stops the export (what it wrote has no end line: import
// refuses it as cut short, see TestImportBadBundleWritesNothing).
func TestExportSessionGoneOrFailing(t *testing.T) {
	c := &clock{now: t0}
	src := memStores(t, c)
	seed(t, src, c)
	from := src
	from.Sessions = store.New(lists{Driver: src.Sessions, gone: "gone"})
	data, sum := export(t, from, bundle.Selection{All: true})
	if sum.Sessions != 4 || strings.Contains(data, `"id":"gone"`) {
		t.Fatalf("export past a deleted session: %+v", sum.Counts)
	}
	from.Sessions = store.New(lists{Driver: src.Sessions, gone: "gone", failing: "s2"})
	var b bytes.Buffer
	if _, err := bundle.Export(ctx, from, bundle.Selection{All: true}, &b, bundle.ExportOptions{}); err == nil || !strings.Contains(err.Error(), `session "s2": disk on fire`) {
		t.Fatalf("export with a failing read = %v", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := bundle.Export(ctx, src, bundle.Selection{All: true}, &b, bundle.ExportOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled export = %v", err)
	}
}

// Damaged records are left out of an export and named; the rest is
// written, and imports.
func TestExportPastDamaged(t *testing.T) {
	c := &clock{now: t0}
	path := filepath.Join(t.TempDir(), "agentmem.db")
	open := func() bundle.Stores {
		st, err := sqlitestore.Open(ctx, path, sqlitestore.Options{Clock: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		fs, _ := factsqlite.Open(ctx, path, factsqlite.Options{})
		bs, _ := blocksqlite.Open(ctx, path, blocksqlite.Options{})
		rb, _ := recallsqlite.Open(ctx, path, recallsqlite.Options{})
		ix := recall.New(rb, recall.Options{})
		t.Cleanup(func() { st.Close(); ix.Close(); fs.Close(); bs.Close() })
		return bundle.Stores{Sessions: st, Facts: fs, Blocks: bs, Recall: ix}
	}
	src := open()
	seed(t, src, c)
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE sessions SET metadata = '{"m":' WHERE id = 's2'`,
		`UPDATE facts SET metadata = '{"m":' WHERE user_id = 'bob'`,
		`UPDATE recall_docs SET metadata = '{"m":' WHERE id = 'kb-1'`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	var b bytes.Buffer
	sum, err := bundle.Export(ctx, src, bundle.Selection{All: true}, &b, bundle.ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var damaged []string
	for _, d := range sum.Damaged {
		damaged = append(damaged, d.Kind+" "+d.ID)
	}
	slices.Sort(damaged)
	if len(damaged) != 3 || !strings.HasPrefix(damaged[0], "document kb-1") || !strings.HasPrefix(damaged[1], "fact ") || damaged[2] != "session s2" {
		t.Fatalf("damaged %q", damaged)
	}
	if sum.Sessions != 3 || sum.Documents != 3 || sum.Facts != 6 {
		t.Fatalf("counts %+v", sum.Counts)
	}
	if _, isum, err := importAll(t, memStores(t, c), &b, bundle.ImportOptions{}); err != nil || isum.Failed != 0 {
		t.Fatalf("import: %+v, %v", isum, err)
	}
}
