package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/migrate"
	"github.com/agentmem/agentmem/internal/sqlitedb"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storetest"
	sqlitelib "modernc.org/sqlite"
)

func TestBasicLifecycle(t *testing.T) {
	ctx := context.Background()
	clock := newTestClock()
	st, _ := openTemp(t, clock.Now)

	s, err := st.Create(ctx, store.CreateRequest{ID: "s1", UserID: "u", Agent: "a", Metadata: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Retention != store.SessionRetention || s.LastSeq != 0 || !s.CreatedAt.Equal(clock.Now()) {
		t.Fatalf("created %+v", s)
	}
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s1"}); !errors.Is(err, agentmem.ErrConflict) {
		t.Fatalf("duplicate create: %v", err)
	}
	clock.Advance(time.Second)
	resp, err := st.Append(ctx, store.AppendRequest{SessionID: "s1", Steps: []agentmem.Step{taskStep("t1", "do it"), actionStep("a1", 1, 500)}})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(resp.Seqs) != "[1 2]" || resp.LastSeq != 2 {
		t.Fatalf("append: %+v", resp)
	}
	// A retry returns the same seqs, whatever ExpectedLastSeq says.
	resp, err = st.Append(ctx, store.AppendRequest{SessionID: "s1", Steps: []agentmem.Step{actionStep("a1", 1, 500)}, ExpectedLastSeq: ptr(int64(0))})
	if err != nil || fmt.Sprint(resp.Seqs) != "[2]" || resp.LastSeq != 2 {
		t.Fatalf("retry: %+v %v", resp, err)
	}
	// A stale ExpectedLastSeq with a new step is a conflict.
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s1", Steps: []agentmem.Step{taskStep("t2", "x")}, ExpectedLastSeq: ptr(int64(1))}); !errors.Is(err, agentmem.ErrConflict) {
		t.Fatalf("conflict: %v", err)
	}
	got, err := st.Get(ctx, "", "s1")
	if err != nil || got.LastSeq != 2 || !got.UpdatedAt.Equal(clock.Now()) || got.Metadata["k"] != "v" {
		t.Fatalf("get: %+v %v", got, err)
	}
	rr, err := st.Read(ctx, store.ReadRequest{SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Entries) != 2 || rr.Entries[1].Step.Info().Number != 2 || rr.Entries[1].Step.Info().ID != "a1" {
		t.Fatalf("read: %+v", rr.Entries)
	}
	if err := st.Delete(ctx, "", "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "", "s1"); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := st.Delete(ctx, "", "s1"); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	ctx := context.Background()
	st, _ := openTemp(t, nil)
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	bad := []store.AppendRequest{
		{SessionID: "s", Steps: []agentmem.Step{taskStep("ok", "fine"), taskStep("", "no id")}},
		{SessionID: "s", Steps: []agentmem.Step{taskStep("ok", "fine"), taskStep("bad", "\xff")}},
		{SessionID: "s", Steps: []agentmem.Step{taskStep("ok", "fine"), &agentmem.ActionStep{StepInfo: agentmem.StepInfo{ID: "x"}, Results: []agentmem.ToolResult{{CallID: "nope"}}}}},
		{SessionID: "s", Steps: []agentmem.Step{taskStep("ok", "fine")}, Compaction: &store.CompactionRecord{Working: []int64{7}}},
		{SessionID: "s\x01", Steps: []agentmem.Step{taskStep("ok", "fine")}},
		{SessionID: "s", Steps: []agentmem.Step{taskStep("big", strings.Repeat("x", store.MaxStepBytes))}},
	}
	for i, req := range bad {
		if _, err := st.Append(ctx, req); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("bad[%d]: %v, want ErrInvalid", i, err)
		}
	}
	rr, err := st.Read(ctx, store.ReadRequest{SessionID: "s"})
	if err != nil || len(rr.Entries) != 0 || rr.Session.LastSeq != 0 {
		t.Fatalf("after bad input: %+v %v", rr, err)
	}
}

func TestCompactionAndWorkingSet(t *testing.T) {
	ctx := context.Background()
	st, _ := openTemp(t, nil)
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	var steps []agentmem.Step
	for i := 1; i <= 20; i++ {
		steps = append(steps, actionStep(fmt.Sprintf("a%d", i), i, 400))
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: steps}); err != nil {
		t.Fatal(err)
	}
	// Summarize 1-17, keep 18-20, truncate 19.
	sum := &agentmem.SummaryStep{StepInfo: agentmem.StepInfo{ID: "sum"}, Summary: "the first 17", Covers: []agentmem.Range{{From: 1, To: 17}}}
	trunc := actionStep("a19", 19, 400)
	trunc.Number = 19
	trunc = trunc.Truncate(20)
	resp, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{sum},
		Compaction:      &store.CompactionRecord{Working: []int64{store.NewStepRef(0), 18, 19, 20}, Replaced: []agentmem.Step{trunc}},
		ExpectedLastSeq: ptr(int64(20))})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(resp.Seqs) != "[21]" || resp.CompactionSeq != 22 || resp.LastSeq != 22 {
		t.Fatalf("compaction append: %+v", resp)
	}
	// Retrying the same compaction stores nothing and reports it.
	resp2, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{sum},
		Compaction:      &store.CompactionRecord{Working: []int64{store.NewStepRef(0), 18, 19, 20}, Replaced: []agentmem.Step{trunc}},
		ExpectedLastSeq: ptr(int64(20))})
	if err != nil || resp2.CompactionSeq != 22 || resp2.LastSeq != 22 {
		t.Fatalf("compaction retry: %+v %v", resp2, err)
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{actionStep("a23", 23, 400)}}); err != nil {
		t.Fatal(err)
	}
	rr, err := st.Read(ctx, store.ReadRequest{SessionID: "s", WorkingSet: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range rr.Steps {
		got = append(got, fmt.Sprintf("%s@%d", s.Info().ID, s.Info().Number))
	}
	if fmt.Sprint(got) != "[sum@21 a18@18 a19@19 a20@20 a23@23]" {
		t.Fatalf("working set %v", got)
	}
	if r := rr.Steps[2].(*agentmem.ActionStep).Results[0].Content; len(r) > 60 {
		t.Fatalf("a19 not replaced by its truncated copy: %d bytes", len(r))
	}
	// The whole log is still there, compaction entry included.
	all, err := st.Read(ctx, store.ReadRequest{SessionID: "s"})
	if err != nil || len(all.Entries) != 23 || all.Entries[21].Kind != store.CompactionEntry {
		t.Fatalf("log: %d entries, %v", len(all.Entries), err)
	}
	last, err := st.Read(ctx, store.ReadRequest{SessionID: "s", Last: 3})
	if err != nil || len(last.Entries) != 3 || last.Entries[0].Seq != 21 {
		t.Fatalf("last 3: %+v %v", last.Entries, err)
	}
	page, err := st.Read(ctx, store.ReadRequest{SessionID: "s", After: 5, Limit: 4})
	if err != nil || len(page.Entries) != 4 || page.Entries[0].Seq != 6 || page.Entries[3].Seq != 9 {
		t.Fatalf("after 5 limit 4: %v", err)
	}
}

func TestBranchesAndDelete(t *testing.T) {
	ctx := context.Background()
	clock := newTestClock()
	st, _ := openTemp(t, clock.Now)
	mustAppend := func(id string, steps ...agentmem.Step) {
		t.Helper()
		if _, err := st.Append(ctx, store.AppendRequest{SessionID: id, Steps: steps}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(id string) string {
		t.Helper()
		rr, err := st.Read(ctx, store.ReadRequest{SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range rr.Entries {
			out = append(out, fmt.Sprintf("%d:%s", e.Seq, e.Step.Info().ID))
		}
		return fmt.Sprint(out)
	}
	if _, err := st.Create(ctx, store.CreateRequest{ID: "g"}); err != nil {
		t.Fatal(err)
	}
	mustAppend("g", taskStep("g1", "1"), taskStep("g2", "2"), taskStep("g3", "3"))
	p, err := st.Create(ctx, store.CreateRequest{ID: "p", ParentID: "g", ForkSeq: 2})
	if err != nil || p.LastSeq != 2 || p.ForkSeq != 2 {
		t.Fatalf("branch: %+v %v", p, err)
	}
	mustAppend("p", taskStep("p3", "3"), taskStep("p4", "4"))
	mustAppend("g", taskStep("g4", "4"))
	// A step ID of the parent after the fork point is not in the branch.
	mustAppend("p", taskStep("g4", "4 again"))
	b, err := st.Create(ctx, store.CreateRequest{ID: "b", ParentID: "p"}) // at p's LastSeq, 5
	if err != nil || b.ForkSeq != 5 {
		t.Fatalf("branch of branch: %+v %v", b, err)
	}
	mustAppend("b", taskStep("b6", "6"))
	// Idempotency across the visible log: g1 is inherited.
	r, err := st.Append(ctx, store.AppendRequest{SessionID: "b", Steps: []agentmem.Step{taskStep("g1", "1")}})
	if err != nil || r.Seqs[0] != 1 {
		t.Fatalf("inherited retry: %+v %v", r, err)
	}
	if _, err := st.Create(ctx, store.CreateRequest{ParentID: "p", ForkSeq: 6}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("fork after last: %v", err)
	}
	if _, err := st.Create(ctx, store.CreateRequest{ParentID: "nope"}); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("fork of missing: %v", err)
	}
	wantG := "[1:g1 2:g2 3:g3 4:g4]"
	wantP := "[1:g1 2:g2 3:p3 4:p4 5:g4]"
	wantB := "[1:g1 2:g2 3:p3 4:p4 5:g4 6:b6]"
	if ids("g") != wantG || ids("p") != wantP || ids("b") != wantB {
		t.Fatalf("logs:\n%s\n%s\n%s", ids("g"), ids("p"), ids("b"))
	}
	// Deleting the middle session keeps b's history; then the root.
	if err := st.Delete(ctx, "", "p"); err != nil {
		t.Fatal(err)
	}
	if got := ids("b"); got != wantB {
		t.Fatalf("b after deleting p: %s", got)
	}
	if err := st.Delete(ctx, "", "g"); err != nil {
		t.Fatal(err)
	}
	if got := ids("b"); got != wantB {
		t.Fatalf("b after deleting g: %s", got)
	}
	got, err := st.Get(ctx, "", "b")
	if err != nil || got.ParentID != "p" || got.ForkSeq != 5 || got.LastSeq != 6 {
		t.Fatalf("b's provenance: %+v %v", got, err)
	}
	// A new session with the deleted parent's ID is not b's history.
	if _, err := st.Create(ctx, store.CreateRequest{ID: "p"}); err != nil {
		t.Fatal(err)
	}
	mustAppend("p", taskStep("new", "new"))
	if got := ids("b"); got != wantB {
		t.Fatalf("b after re-creating p: %s", got)
	}
	var n int
	if err := st.r.QueryRow("SELECT count(*) FROM entries WHERE session_id = 'b'").Scan(&n); err != nil || n != 6 {
		t.Fatalf("b owns %d entries, %v", n, err)
	}
}

func TestExpiryAndPrune(t *testing.T) {
	ctx := context.Background()
	clock := newTestClock()
	st, _ := openTemp(t, clock.Now)
	if _, err := st.Create(ctx, store.CreateRequest{ID: "short", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, store.CreateRequest{ID: "keep", Retention: store.Persistent}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "short", Steps: []agentmem.Step{taskStep("t", "x")}}); err != nil {
		t.Fatal(err)
	}
	br, err := st.Create(ctx, store.CreateRequest{ID: "br", ParentID: "short"})
	if err != nil {
		t.Fatal(err)
	}
	_ = br
	clock.Advance(time.Hour)
	for _, err := range []error{
		func() error { _, err := st.Get(ctx, "", "short"); return err }(),
		func() error { _, err := st.Read(ctx, store.ReadRequest{SessionID: "short"}); return err }(),
		func() error {
			_, err := st.Append(ctx, store.AppendRequest{SessionID: "short", Steps: []agentmem.Step{taskStep("u", "x")}})
			return err
		}(),
		func() error { _, err := st.Create(ctx, store.CreateRequest{ParentID: "short"}); return err }(),
	} {
		if !errors.Is(err, agentmem.ErrNotFound) {
			t.Fatalf("expired: %v", err)
		}
	}
	l, err := st.List(ctx, store.ListRequest{})
	if err != nil || len(l.Sessions) != 2 {
		t.Fatalf("list: %+v %v", l, err)
	}
	pr, err := st.Prune(ctx, store.PruneRequest{})
	if err != nil || pr.SessionsDeleted != 1 {
		t.Fatalf("prune: %+v %v", pr, err)
	}
	rr, err := st.Read(ctx, store.ReadRequest{SessionID: "br"})
	if err != nil || len(rr.Entries) != 1 || rr.Entries[0].Step.Info().ID != "t" {
		t.Fatalf("branch after its parent expired: %+v %v", rr, err)
	}
}

func TestPruneCovered(t *testing.T) {
	ctx := context.Background()
	clock := newTestClock()
	st, _ := openTemp(t, clock.Now)
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	var steps []agentmem.Step
	for i := 1; i <= 10; i++ {
		steps = append(steps, taskStep(fmt.Sprintf("s%d", i), "x"))
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: steps}); err != nil {
		t.Fatal(err)
	}
	// A branch at 6 whose working set is all of 1-6 plus its own.
	if _, err := st.Create(ctx, store.CreateRequest{ID: "b", ParentID: "s", ForkSeq: 6}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	sum := &agentmem.SummaryStep{StepInfo: agentmem.StepInfo{ID: "sum"}, Summary: "1-8", Covers: []agentmem.Range{{From: 1, To: 8}}}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{sum},
		Compaction: &store.CompactionRecord{Working: []int64{1, store.NewStepRef(0), 9, 10}}}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	pr, err := st.Prune(ctx, store.PruneRequest{CoveredBefore: clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	// 2-6 are in b's working set; 7 and 8 go.
	if pr.EntriesDeleted != 2 {
		t.Fatalf("prune deleted %d entries, want 2", pr.EntriesDeleted)
	}
	rr, err := st.Read(ctx, store.ReadRequest{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, e := range rr.Entries {
		seqs = append(seqs, e.Seq)
	}
	if fmt.Sprint(seqs) != "[1 2 3 4 5 6 9 10 11 12]" {
		t.Fatalf("left %v", seqs)
	}
	ws, err := st.Read(ctx, store.ReadRequest{SessionID: "s", WorkingSet: true})
	if err != nil || len(ws.Steps) != 4 {
		t.Fatalf("working set after prune: %v", err)
	}
	// With the branch gone, 2-6 go too.
	if err := st.Delete(ctx, "", "b"); err != nil {
		t.Fatal(err)
	}
	pr, err = st.Prune(ctx, store.PruneRequest{CoveredBefore: clock.Now()})
	if err != nil || pr.EntriesDeleted != 5 {
		t.Fatalf("second prune: %+v %v", pr, err)
	}
}

func TestImport(t *testing.T) {
	ctx := context.Background()
	clock := newTestClock()
	src, _ := openTemp(t, clock.Now)
	dst, _ := openTemp(t, clock.Now)
	if _, err := src.Create(ctx, store.CreateRequest{ID: "s", Tenant: "t", TTL: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		clock.Advance(time.Minute)
		if _, err := src.Append(ctx, store.AppendRequest{Tenant: "t", SessionID: "s", Steps: []agentmem.Step{actionStep(fmt.Sprintf("a%d", i), i, 300)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.Append(ctx, store.AppendRequest{Tenant: "t", SessionID: "s", Compaction: &store.CompactionRecord{Working: []int64{4, 5}, Removed: []int64{1, 2, 3}}}); err != nil {
		t.Fatal(err)
	}
	rr, err := src.Read(ctx, store.ReadRequest{Tenant: "t", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.ImportEntries(ctx, rr.Session, rr.Entries); err != nil {
		t.Fatal(err)
	}
	if err := dst.ImportEntries(ctx, rr.Session, rr.Entries); !errors.Is(err, agentmem.ErrConflict) {
		t.Fatalf("import twice: %v", err)
	}
	got, err := dst.Read(ctx, store.ReadRequest{Tenant: "t", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%+v", got.Session) != fmt.Sprintf("%+v", rr.Session) {
		t.Fatalf("session:\n%+v\n%+v", got.Session, rr.Session)
	}
	for i := range rr.Entries {
		a, b := rr.Entries[i], got.Entries[i]
		ja, _ := encodeEntry(a)
		jb, _ := encodeEntry(b)
		if a.Seq != b.Seq || !a.Time.Equal(b.Time) || string(ja) != string(jb) {
			t.Fatalf("entry %d differs", i)
		}
	}
	var sa, sb []byte
	src.r.QueryRow("SELECT group_concat(body, '|') FROM entries WHERE session_id = 's'").Scan(&sa)
	dst.r.QueryRow("SELECT group_concat(body, '|') FROM entries WHERE session_id = 's'").Scan(&sb)
	if string(sa) != string(sb) {
		t.Fatal("stored bytes differ after import")
	}
}

func encodeEntry(e store.Entry) ([]byte, error) {
	if e.Kind == store.StepEntry {
		return store.EncodeStep(e.Step)
	}
	return store.EncodeCompaction(e.Compaction)
}

func TestListPaging(t *testing.T) {
	ctx := context.Background()
	clock := newTestClock()
	st, _ := openTemp(t, clock.Now)
	for i := 0; i < 25; i++ {
		agent := "x"
		if i%2 == 0 {
			agent = "y"
		}
		if _, err := st.Create(ctx, store.CreateRequest{ID: fmt.Sprintf("s%02d", i), Agent: agent}); err != nil {
			t.Fatal(err)
		}
		if i%3 != 0 {
			clock.Advance(time.Second) // some share a creation time
		}
	}
	var all []string
	token := ""
	for {
		l, err := st.List(ctx, store.ListRequest{PageSize: 7, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range l.Sessions {
			all = append(all, s.ID)
		}
		if token = l.NextPageToken; token == "" {
			break
		}
	}
	if len(all) != 25 || all[0] != "s24" || all[24] != "s00" {
		t.Fatalf("list: %v", all)
	}
	l, err := st.List(ctx, store.ListRequest{Agent: "y", PageSize: 100})
	if err != nil || len(l.Sessions) != 13 || l.NextPageToken != "" {
		t.Fatalf("filtered: %d %v", len(l.Sessions), err)
	}
	if _, err := st.List(ctx, store.ListRequest{PageToken: "garbage!"}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("bad token: %v", err)
	}
}

func TestClose(t *testing.T) {
	ctx := context.Background()
	st, _ := openTemp(t, nil)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := st.Get(ctx, "", "x"); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("get after close: %v", err)
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "x", Steps: []agentmem.Step{taskStep("a", "b")}}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
}

// TestLockedAndCorrupt: a write that finds the database locked by another
// process past the busy timeout fails with an error marked transient
// (agentmem.ErrUnavailable), and changes nothing; a stored entry that
// does not decode is an error that is neither transient nor one of the
// contract's. The classes are the portable store's, from the driver's
// ClassifyError.
func TestLockedAndCorrupt(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentmem.db")
	d, err := OpenDriver(ctx, path, Options{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(d)
	t.Cleanup(func() { st.Close() })
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{taskStep("a", "first"), taskStep("b", "second")}}); err != nil {
		t.Fatal(err)
	}

	// Another process (a connection of its own) holds the write lock.
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetMaxOpenConns(1)
	lock, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(`UPDATE entries SET body = CAST('{"type":"task","garbage' AS BLOB) WHERE session_id = 's' AND seq = 2`); err != nil {
		t.Fatal(err)
	}
	_, err = st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{taskStep("c", "third")}})
	var busy *sqlitelib.Error
	if !errors.Is(err, agentmem.ErrUnavailable) || isStoreErr(err) || !errors.As(err, &busy) {
		t.Errorf("append to a locked database: %v; want ErrUnavailable, and SQLite's error", err)
	}
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s2"}); !errors.Is(err, agentmem.ErrUnavailable) {
		t.Errorf("create in a locked database: %v; want ErrUnavailable", err)
	}
	if err := lock.Commit(); err != nil { // the damage is done
		t.Fatal(err)
	}

	got, err := st.Get(ctx, "", "s")
	if err != nil || got.LastSeq != 2 {
		t.Fatalf("after the locked append: %+v, %v; want last_seq 2", got, err)
	}
	_, err = st.Read(ctx, store.ReadRequest{SessionID: "s"})
	if err == nil || isStoreErr(err) || errors.Is(err, agentmem.ErrUnavailable) || !strings.Contains(err.Error(), "entry 2") {
		t.Errorf("read over a corrupt entry: %v; want an error naming entry 2, neither a contract error nor a transient one", err)
	}
}

func TestMigrations(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	st, err := OpenDriver(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var version int
	var tables int
	st.r.QueryRow("SELECT max(version) FROM agentmem_migrations WHERE component = 'sessions'").Scan(&version)
	st.r.QueryRow("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('sessions', 'entries')").Scan(&tables)
	if version != SchemaVersion() || version < 1 || tables != 2 {
		t.Fatalf("fresh database: version %d, %d tables", version, tables)
	}
	for name, db := range map[string]*sql.DB{"writer": st.w, "reader": st.r} {
		var mode string
		var sync, fk, busy int
		db.QueryRow("PRAGMA journal_mode").Scan(&mode)
		db.QueryRow("PRAGMA synchronous").Scan(&sync)
		db.QueryRow("PRAGMA foreign_keys").Scan(&fk)
		db.QueryRow("PRAGMA busy_timeout").Scan(&busy)
		if mode != "wal" || sync != 2 || fk != 1 || busy != int(DefaultBusyTimeout.Milliseconds()) {
			t.Fatalf("%s connection: journal_mode %q, synchronous %d (want 2, FULL), foreign_keys %d, busy_timeout %d",
				name, mode, sync, fk, busy)
		}
	}
	if _, err := st.Create(ctx, store.CreateRequest{ID: "kept"}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	// Reopening is a no-op that keeps the data.
	st, err = OpenDriver(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var rows int
	st.r.QueryRow("SELECT count(*) FROM agentmem_migrations WHERE component = 'sessions'").Scan(&rows)
	if rows != SchemaVersion() {
		t.Fatalf("agentmem_migrations has %d sessions rows after reopening", rows)
	}
	if _, err := st.Get(ctx, "", "kept"); err != nil {
		t.Fatal(err)
	}
	st.Close()

	// A schema from the future is refused, and left alone.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO agentmem_migrations (component, version, name) VALUES ('sessions', ?, 'from_the_future')", SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if st, err := OpenDriver(ctx, path, Options{}); !errors.Is(err, ErrSchemaTooNew) {
		if st != nil {
			st.Close()
		}
		t.Fatalf("future schema: %v", err)
	}
}

func TestMemory(t *testing.T) {
	ctx := context.Background()
	st, err := OpenDriver(ctx, MemoryPath, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Create(ctx, store.CreateRequest{ID: "m"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "m", Steps: []agentmem.Step{taskStep("a", "b")}}); err != nil {
		t.Fatal(err)
	}
	rr, err := st.Read(ctx, store.ReadRequest{SessionID: "m", WorkingSet: true})
	if err != nil || len(rr.Steps) != 1 {
		t.Fatalf("%+v %v", rr, err)
	}
}

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		url, path string
		opts      Options
		bad       bool
	}{
		{url: "sqlite:///var/lib/agentmem.db", path: "/var/lib/agentmem.db"},
		{url: "sqlite://data/agentmem.db", path: "data/agentmem.db"},
		{url: "sqlite:agentmem.db", path: "agentmem.db"},
		{url: "sqlite:///tmp/a%20b.db?busy_timeout=2s&read_conns=2", path: "/tmp/a b.db", opts: Options{BusyTimeout: 2 * time.Second, ReadConns: 2}},
		{url: "sqlite://?mode=memory", path: MemoryPath},
		{url: "sqlite::memory:", path: MemoryPath},
		{url: "sqlite://", bad: true},
		{url: "sqlite:///x.db?sync=off", bad: true},
		{url: "sqlite:///x.db?busy_timeout=soon", bad: true},
		{url: "sqlite:///x.db?mode=memory", bad: true},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		path, opts, err := ParseURL(u)
		if tc.bad {
			if err == nil {
				t.Errorf("%s: no error", tc.url)
			}
			continue
		}
		if err != nil || path != tc.path || opts.BusyTimeout != tc.opts.BusyTimeout || opts.ReadConns != tc.opts.ReadConns {
			t.Errorf("%s: %q %+v %v", tc.url, path, opts, err)
		}
	}
}

func TestStoreOpenURL(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "u.db")
	st, err := store.Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var d *Store
	if !st.As(&d) {
		t.Fatalf("store.Open gave %v", st)
	}
	if _, err := st.Create(ctx, store.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
}

// TestMigrationTenantKeys upgrades a database of schema 2 (session IDs
// global) holding sessions of two tenants, a branch and a feed consumer
// to schema 3 (IDs per tenant): every session, entry and cursor is kept,
// the branch still reads its parent, and the same ID can then be created
// in another tenant.
func TestMigrationTenantKeys(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v2.db")
	db, err := sqlitedb.Open(path, sqlitedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v2 := &migrate.Set{Component: migrations.Component, Migrations: migrations.Migrations[:2]}
	if err := migrate.SQLite(ctx, db.W, v2); err != nil {
		t.Fatal(err)
	}
	body := func(id string, seq int) string {
		return fmt.Sprintf(`{"type":"task","id":%q,"number":%d,"task":"t %s"}`, id, seq, id)
	}
	for _, q := range []string{
		`INSERT INTO sessions (id, tenant, retention, created_at, updated_at, last_seq) VALUES ('a', 'acme', 'session', 1, 1, 2)`,
		`INSERT INTO sessions (id, tenant, parent_id, fork_seq, base_id, base_seq, retention, created_at, updated_at, last_seq)
			VALUES ('b', 'acme', 'a', 1, 'a', 1, 'session', 2, 2, 2)`,
		`INSERT INTO sessions (id, tenant, retention, created_at, updated_at, last_seq) VALUES ('g', 'globex', 'session', 3, 3, 1)`,
		`INSERT INTO entries (session_id, seq, kind, step_id, body, created_at) VALUES ('a', 1, 'step', 'a1', CAST('` + body("a1", 1) + `' AS BLOB), 1)`,
		`INSERT INTO entries (session_id, seq, kind, step_id, body, created_at) VALUES ('a', 2, 'step', 'a2', CAST('` + body("a2", 2) + `' AS BLOB), 1)`,
		`INSERT INTO entries (session_id, seq, kind, step_id, body, created_at) VALUES ('b', 2, 'step', 'b2', CAST('` + body("b2", 2) + `' AS BLOB), 2)`,
		`INSERT INTO entries (session_id, seq, kind, step_id, body, created_at) VALUES ('g', 1, 'step', 'g1', CAST('` + body("g1", 1) + `' AS BLOB), 3)`,
		`INSERT INTO feed_cursors (consumer, pos) VALUES ('recall', 2)`,
	} {
		if _, err := db.W.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var feedRows int
	db.W.QueryRow("SELECT count(*) FROM feed").Scan(&feedRows)
	db.Close()

	st, err := OpenDriver(ctx, path, Options{})
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	defer st.Close()
	var version, after int
	st.r.QueryRow("SELECT max(version) FROM agentmem_migrations WHERE component = 'sessions'").Scan(&version)
	st.r.QueryRow("SELECT count(*) FROM feed").Scan(&after)
	if version != SchemaVersion() || after != feedRows {
		t.Fatalf("after the upgrade: version %d, %d feed rows (want %d, %d: the rebuild records no change)", version, after, SchemaVersion(), feedRows)
	}
	if c, err := st.LoadCursor(ctx, "recall"); err != nil || c.Pos != 2 {
		t.Fatalf("cursor: %+v, %v", c, err)
	}
	storetest.CheckTenantUpgrade(t, store.New(st))
	var fk int
	st.r.QueryRow("SELECT count(*) FROM pragma_foreign_key_check").Scan(&fk)
	if fk != 0 {
		t.Fatalf("%d foreign key violations", fk)
	}
}
