package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

func action(id, text string) *agentmem.ActionStep {
	return &agentmem.ActionStep{
		StepInfo:    agentmem.StepInfo{ID: id},
		ModelOutput: text,
		ToolCalls:   []agentmem.ToolCall{{ID: "call-" + id, Name: "search", Arguments: `{"q":"` + id + `"}`}},
		Results:     []agentmem.ToolResult{{CallID: "call-" + id, Content: "result of " + text}},
	}
}

func TestOpenByURL(t *testing.T) {
	url := testURL(t)
	schema := freshSchema(t, url)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	for _, scheme := range []string{"postgres", "postgresql"} {
		u := scheme + strings.TrimPrefix(strings.TrimPrefix(url, "postgresql"), "postgres") + sep + SchemaParam + "=" + schema
		st, err := store.Open(context.Background(), u)
		if err != nil {
			t.Fatalf("store.Open(%s): %v", scheme, err)
		}
		var ps *Store
		if !st.As(&ps) || ps.Schema() != schema {
			t.Errorf("store.Open(%s) = %v with schema %q, want *postgres.Store on %q", scheme, st, ps.Schema(), schema)
		}
		if _, err := st.Create(context.Background(), store.CreateRequest{ID: "by-" + scheme}); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	// Both opened the same schema.
	st := openTest(t, Options{Schema: schema})
	if n := queryInt(t, st, "SELECT count(*) FROM sessions"); n != 2 {
		t.Errorf("%d sessions in schema %s, want 2", n, schema)
	}
}

func TestSchemasAreIsolated(t *testing.T) {
	ctx := context.Background()
	a, b := openTest(t, Options{}), openTest(t, Options{})
	if _, err := a.Create(ctx, store.CreateRequest{ID: "only-in-a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "", "only-in-a"); !errors.Is(err, agentmem.ErrNotFound) {
		t.Errorf("Get from another schema: %v, want ErrNotFound", err)
	}
	for _, st := range []*Store{a, b} {
		n := queryInt(t, st, `SELECT count(*) FROM pg_tables WHERE schemaname = $1
			AND tablename IN ('sessions', 'entries', 'agentmem_migrations')`, st.Schema())
		if n != 3 {
			t.Errorf("schema %s has %d of the store's 3 tables", st.Schema(), n)
		}
	}
}

func TestOpenBadInput(t *testing.T) {
	ctx := context.Background()
	if _, err := OpenDriver(ctx, "postgres://u:secret-pw@[::1", Options{}); err == nil || strings.Contains(err.Error(), "secret-pw") {
		t.Errorf("Open of a malformed URL: %v; want an error without the password", err)
	}
	if _, err := OpenDriver(ctx, "postgres://localhost/db", Options{Schema: strings.Repeat("s", 64)}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("Open with a 64-byte schema name: %v, want ErrInvalid", err)
	}
}

// TestUnreachableServer: a server that cannot be reached is an error that
// says so (the HTTP server turns it into a 503), never ErrNotFound.
func TestUnreachableServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = OpenDriver(ctx, "postgres://nobody@"+addr+"/db?sslmode=disable&connect_timeout=2", Options{})
	if err == nil {
		t.Fatal("Open of an unreachable server succeeded")
	}
	for _, sentinel := range []error{agentmem.ErrNotFound, agentmem.ErrInvalid, agentmem.ErrConflict} {
		if errors.Is(err, sentinel) {
			t.Errorf("Open: %v wraps %v", err, sentinel)
		}
	}
	if !errors.Is(err, agentmem.ErrUnavailable) {
		t.Errorf("Open: %v does not wrap ErrUnavailable (transient)", err)
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) && !strings.Contains(err.Error(), "connect") {
		t.Errorf("Open: %v does not say the connection failed", err)
	}
}

// TestServerGone: once the store is open, losing the server makes every
// call fail with a wrapped connection error, never a contract error such as
// ErrNotFound. (The store here is built on a pool whose server is gone, as
// Open would have left it.) The classes are the portable store's, from the
// driver's ClassifyError.
func TestServerGone(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, "postgres://nobody@"+addr+"/db?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	dead := store.New(newStore(pool, "", time.Now, nil))
	defer dead.Close()
	calls := map[string]func() error{
		"Get":    func() error { _, err := dead.Get(ctx, "", "s"); return err },
		"Create": func() error { _, err := dead.Create(ctx, store.CreateRequest{}); return err },
		"Append": func() error {
			_, err := dead.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{action("a", "x")}})
			return err
		},
		"Read":   func() error { _, err := dead.Read(ctx, store.ReadRequest{SessionID: "s"}); return err },
		"List":   func() error { _, err := dead.List(ctx, store.ListRequest{}); return err },
		"Delete": func() error { return dead.Delete(ctx, "", "s") },
		"Prune":  func() error { _, err := dead.Prune(ctx, store.PruneRequest{}); return err },
		"Ping":   func() error { return dead.Ping(ctx) },
	}
	for name, call := range calls {
		err := call()
		if err == nil {
			t.Errorf("%s on a dead server succeeded", name)
			continue
		}
		if isStoreErr(err) {
			t.Errorf("%s on a dead server: %v, a contract error; want a connection error", name, err)
		}
		if !strings.Contains(err.Error(), "connect") {
			t.Errorf("%s on a dead server: %v does not say the connection failed", name, err)
		}
		if !errors.Is(err, agentmem.ErrUnavailable) {
			t.Errorf("%s on a dead server: %v is not marked transient (ErrUnavailable)", name, err)
		}
	}
}

func TestClosed(t *testing.T) {
	st := openTest(t, Options{})
	ctx := context.Background()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	errs := map[string]error{}
	_, errs["Create"] = st.Create(ctx, store.CreateRequest{})
	_, errs["Get"] = st.Get(ctx, "", "x")
	_, errs["List"] = st.List(ctx, store.ListRequest{})
	_, errs["Append"] = st.Append(ctx, store.AppendRequest{SessionID: "x", Steps: []agentmem.Step{action("a", "x")}})
	_, errs["Read"] = st.Read(ctx, store.ReadRequest{SessionID: "x"})
	_, errs["Prune"] = st.Prune(ctx, store.PruneRequest{})
	errs["Delete"] = st.Delete(ctx, "", "x")
	errs["ImportEntries"] = st.ImportEntries(ctx, &store.Session{ID: "x"}, nil)
	for name, err := range errs {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close: %v, want store.ErrClosed", name, err)
		}
	}
}

// TestNULRefused: PostgreSQL text cannot hold the byte 0, which is valid
// UTF-8: such names are refused as invalid input, before any SQL.
func TestNULRefused(t *testing.T) {
	st := store.New(openTest(t, Options{}))
	ctx := context.Background()
	if _, err := st.Create(ctx, store.CreateRequest{Tenant: "a\x00b"}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("Create with NUL in tenant: %v, want ErrInvalid", err)
	}
	if _, err := st.List(ctx, store.ListRequest{Agent: "a\x00b"}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("List with NUL in agent: %v, want ErrInvalid", err)
	}
	// Every field is refused with NUL, by every backend alike (store's
	// validation), although JSON text could hold it in metadata.
	if _, err := st.Create(ctx, store.CreateRequest{Metadata: map[string]string{"k": "v\x00w"}}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("Create with NUL in a metadata value: %v, want ErrInvalid", err)
	}
	s, err := st.Create(ctx, store.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Append(ctx, store.AppendRequest{SessionID: s.ID, Steps: []agentmem.Step{action("x\x00y", "t")}})
	if !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("Append of a step ID with NUL: %v, want ErrInvalid", err)
	}
}

// TestStepBytesKept: the step JSON is stored as bytes and read back
// unchanged (jsonb would reorder the keys).
func TestStepBytesKept(t *testing.T) {
	st := openTest(t, Options{})
	ctx := context.Background()
	s, err := st.Create(ctx, store.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	step := action("a1", "zeta before alpha: \u00e9\u4e16 <&>")
	step.Metadata = map[string]string{"z": "1", "a": "2"}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: s.ID, Steps: []agentmem.Step{step}}); err != nil {
		t.Fatal(err)
	}
	want, err := store.EncodeStep(store.WithNumber(step, 1))
	if err != nil {
		t.Fatal(err)
	}
	var stored []byte
	if err := st.pool.QueryRow(ctx, "SELECT body FROM entries WHERE session_id = $1 AND seq = 1", s.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if string(stored) != string(want) {
		t.Errorf("stored body\n%s\nwant\n%s", stored, want)
	}
	resp, err := st.Read(ctx, store.ReadRequest{SessionID: s.ID})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := store.EncodeStep(resp.Entries[0].Step)
	if string(got) != string(want) {
		t.Errorf("read back\n%s\nwant\n%s", got, want)
	}
}

func TestMigrationsConcurrentOpen(t *testing.T) {
	url := testURL(t)
	schema := freshSchema(t, url)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	stores := make([]*Store, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = OpenDriver(context.Background(), url, Options{Schema: schema})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		} else {
			defer stores[i].Close()
		}
	}
	if t.Failed() {
		return
	}
	st := stores[0]
	if got := queryInt(t, st, "SELECT count(*) FROM agentmem_migrations WHERE component = 'sessions'"); got != int64(SchemaVersion()) {
		t.Errorf("%d sessions rows in agentmem_migrations, want %d (each migration applied once)", got, SchemaVersion())
	}
	if got := queryInt(t, st, "SELECT max(version) FROM agentmem_migrations WHERE component = 'sessions'"); got != int64(SchemaVersion()) {
		t.Errorf("schema version %d, want %d", got, SchemaVersion())
	}
	// Reopening applies nothing again.
	re, err := OpenDriver(context.Background(), url, Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	re.Close()
	if got := queryInt(t, st, "SELECT count(*) FROM agentmem_migrations WHERE component = 'sessions'"); got != int64(SchemaVersion()) {
		t.Errorf("after a reopen: %d sessions rows in agentmem_migrations", got)
	}
}

func TestMigrationsRefuseNewerSchema(t *testing.T) {
	st := openTest(t, Options{})
	future := SchemaVersion() + 1
	execSQL(t, st, "INSERT INTO agentmem_migrations (component, version, name) VALUES ('sessions', $1, 'from the future')", future)
	_, err := OpenDriver(context.Background(), testURL(t), Options{Schema: st.Schema()})
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open of a schema at version %d: %v, want ErrSchemaTooNew", future, err)
	}
	if !strings.Contains(err.Error(), fmt.Sprint(future)) {
		t.Errorf("error %q does not name the version", err)
	}
}

func TestMigrationFiles(t *testing.T) {
	if n := len(migrations.Migrations); n == 0 || SchemaVersion() != n {
		t.Fatalf("%d migrations, SchemaVersion %d", n, SchemaVersion())
	}
}

// TestDeleteChain: deleting the middle and then the root of a chain of
// branches leaves every branch its whole visible log.
func TestDeleteChain(t *testing.T) {
	st := openTest(t, Options{})
	ctx := context.Background()
	mustAppend := func(id string, steps ...string) {
		t.Helper()
		var ss []agentmem.Step
		for _, s := range steps {
			ss = append(ss, action(id+"-"+s, s))
		}
		if _, err := st.Append(ctx, store.AppendRequest{SessionID: id, Steps: ss}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(id string) string {
		t.Helper()
		resp, err := st.Read(ctx, store.ReadRequest{SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range resp.Entries {
			out = append(out, fmt.Sprintf("%d:%s", e.Seq, e.Step.Info().ID))
		}
		return strings.Join(out, " ")
	}
	for _, c := range []store.CreateRequest{{ID: "root"}} {
		if _, err := st.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	mustAppend("root", "1", "2", "3", "4")
	if _, err := st.Create(ctx, store.CreateRequest{ID: "mid", ParentID: "root", ForkSeq: 3}); err != nil {
		t.Fatal(err)
	}
	mustAppend("mid", "4", "5", "6")
	if _, err := st.Create(ctx, store.CreateRequest{ID: "leaf", ParentID: "mid", ForkSeq: 5}); err != nil {
		t.Fatal(err)
	}
	mustAppend("leaf", "6")
	// A branch of mid before mid's own entries: it reads root only.
	if _, err := st.Create(ctx, store.CreateRequest{ID: "early", ParentID: "mid", ForkSeq: 2}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"leaf":  ids("leaf"),
		"early": ids("early"),
	}
	if want["leaf"] != "1:root-1 2:root-2 3:root-3 4:mid-4 5:mid-5 6:leaf-6" {
		t.Fatalf("leaf reads %s", want["leaf"])
	}
	if want["early"] != "1:root-1 2:root-2" {
		t.Fatalf("early reads %s", want["early"])
	}
	if err := st.Delete(ctx, "", "mid"); err != nil {
		t.Fatal(err)
	}
	for id, w := range want {
		if got := ids(id); got != w {
			t.Errorf("after deleting mid, %s reads %s, want %s", id, got, w)
		}
	}
	if err := st.Delete(ctx, "", "root"); err != nil {
		t.Fatal(err)
	}
	for id, w := range want {
		if got := ids(id); got != w {
			t.Errorf("after deleting root, %s reads %s, want %s", id, got, w)
		}
	}
	leaf, err := st.Get(ctx, "", "leaf")
	if err != nil {
		t.Fatal(err)
	}
	if leaf.ParentID != "mid" || leaf.ForkSeq != 5 {
		t.Errorf("leaf's provenance changed: parent %q fork %d", leaf.ParentID, leaf.ForkSeq)
	}
	// An idempotent retry still finds the copied history.
	resp, err := st.Append(ctx, store.AppendRequest{SessionID: "leaf", Steps: []agentmem.Step{action("root-2", "2")}})
	if err != nil || resp.Seqs[0] != 2 {
		t.Errorf("retry of an inherited step: %v, %v; want seq 2", resp, err)
	}
	if n := queryInt(t, st, "SELECT count(*) FROM entries WHERE session_id IN ('root', 'mid')"); n != 0 {
		t.Errorf("%d entries of deleted sessions remain", n)
	}
}

// TestPruneKeepsWhatBranchesNeed: covered steps of a parent that a branch
// still has in its working set survive Prune; the rest go.
func TestPruneKeepsWhatBranchesNeed(t *testing.T) {
	clock := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	st := openTest(t, Options{Clock: now})
	ctx := context.Background()
	if _, err := st.Create(ctx, store.CreateRequest{ID: "p"}); err != nil {
		t.Fatal(err)
	}
	var ss []agentmem.Step
	for i := 1; i <= 6; i++ {
		ss = append(ss, action(fmt.Sprint("s", i), fmt.Sprint(i)))
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "p", Steps: ss}); err != nil {
		t.Fatal(err)
	}
	// b forked at 4 sees 1..4 and has no compaction: it needs all four.
	if _, err := st.Create(ctx, store.CreateRequest{ID: "b", ParentID: "p", ForkSeq: 4}); err != nil {
		t.Fatal(err)
	}
	// c forked at 2 compacts to [summary, 2]: it needs 2 only.
	if _, err := st.Create(ctx, store.CreateRequest{ID: "c", ParentID: "p", ForkSeq: 2}); err != nil {
		t.Fatal(err)
	}
	sum := &agentmem.SummaryStep{StepInfo: agentmem.StepInfo{ID: "c-sum"}, Summary: "one", Covers: []agentmem.Range{{From: 1, To: 1}}}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "c", Steps: []agentmem.Step{sum},
		Compaction: &store.CompactionRecord{Working: []int64{store.NewStepRef(0), 2}, Removed: []int64{1}}}); err != nil {
		t.Fatal(err)
	}
	// p compacts to [summary, 6]: covered 1..5.
	psum := &agentmem.SummaryStep{StepInfo: agentmem.StepInfo{ID: "p-sum"}, Summary: "five", Covers: []agentmem.Range{{From: 1, To: 5}}}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "p", Steps: []agentmem.Step{psum},
		Compaction: &store.CompactionRecord{Working: []int64{store.NewStepRef(0), 6}, Removed: []int64{1, 2, 3, 4, 5}}}); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Hour)
	resp, err := st.Prune(ctx, store.PruneRequest{CoveredBefore: clock})
	if err != nil {
		t.Fatal(err)
	}
	// Only 5 is in no working set (b holds 1-4).
	if resp.EntriesDeleted != 1 {
		t.Errorf("EntriesDeleted = %d, want 1", resp.EntriesDeleted)
	}
	if n := queryInt(t, st, "SELECT count(*) FROM entries WHERE session_id = 'p' AND seq = 5"); n != 0 {
		t.Errorf("step 5 of p survived")
	}
	// Without b, 1, 3 and 4 go too (c still holds 2).
	if err := st.Delete(ctx, "", "b"); err != nil {
		t.Fatal(err)
	}
	resp, err = st.Prune(ctx, store.PruneRequest{CoveredBefore: clock})
	if err != nil {
		t.Fatal(err)
	}
	if resp.EntriesDeleted != 3 {
		t.Errorf("EntriesDeleted = %d, want 3", resp.EntriesDeleted)
	}
	r, err := st.Read(ctx, store.ReadRequest{SessionID: "c", WorkingSet: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Steps) != 2 || r.Steps[0].Info().ID != "c-sum" || r.Steps[1].Info().ID != "s2" {
		t.Errorf("c's working set after prune: %v", r.Steps)
	}
}

// TestExample runs what Example shows, against the test database.
func TestExample(t *testing.T) {
	ctx := context.Background()
	st := openTest(t, Options{})
	sess, err := st.Create(ctx, store.CreateRequest{UserID: "u1", Agent: "researcher"})
	if err != nil {
		t.Fatal(err)
	}
	last := sess.LastSeq
	resp, err := st.Append(ctx, store.AppendRequest{
		SessionID: sess.ID,
		Steps: []agentmem.Step{
			&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: agentmem.NewID()}, Task: "Find the bug"},
			&agentmem.FinalAnswerStep{StepInfo: agentmem.StepInfo{ID: agentmem.NewID()}, Answer: "It was the cache"},
		},
		ExpectedLastSeq: &last,
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(resp.Seqs) != "[1 2]" {
		t.Errorf("stored at %v", resp.Seqs)
	}
	read, err := st.Read(ctx, store.ReadRequest{SessionID: sess.ID, WorkingSet: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range read.Steps {
		got = append(got, fmt.Sprint(s.Info().Number, " ", s.Kind()))
	}
	if want := "[1 task 2 final_answer]"; fmt.Sprint(got) != want {
		t.Errorf("working set %v, want %s", got, want)
	}
	// The same append again is a retry: the same seqs, nothing stored.
	again, err := st.Append(ctx, store.AppendRequest{SessionID: sess.ID, Steps: []agentmem.Step{
		&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: read.Steps[0].Info().ID}, Task: "Find the bug"},
	}, ExpectedLastSeq: &last})
	if err != nil || again.Seqs[0] != 1 || again.LastSeq != 2 {
		t.Errorf("retry: %+v, %v", again, err)
	}
}

// TestWorkingSetReadsOnlyWhatItNeeds: a working-set read after a
// compaction reads the compaction, the steps it names and what follows,
// not the covered steps: damaging a covered entry does not disturb it,
// while a full read reports the damage (as an error that is not a
// contract error: the input was fine, the data is not).
func TestWorkingSetReadsOnlyWhatItNeeds(t *testing.T) {
	st := openTest(t, Options{})
	ctx := context.Background()
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	var ss []agentmem.Step
	for i := 1; i <= 5; i++ {
		ss = append(ss, action(fmt.Sprint("a", i), fmt.Sprint(i)))
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: ss}); err != nil {
		t.Fatal(err)
	}
	sum := &agentmem.SummaryStep{StepInfo: agentmem.StepInfo{ID: "sum"}, Summary: "1-3", Covers: []agentmem.Range{{From: 1, To: 3}}}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{sum},
		Compaction: &store.CompactionRecord{Working: []int64{store.NewStepRef(0), 4, 5}, Removed: []int64{1, 2, 3}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{action("a8", "8")}}); err != nil {
		t.Fatal(err)
	}
	execSQL(t, st, "UPDATE entries SET body = 'not json' WHERE session_id = 's' AND seq = 2")
	resp, err := st.Read(ctx, store.ReadRequest{SessionID: "s", WorkingSet: true})
	if err != nil {
		t.Fatalf("working set: %v", err)
	}
	var got []string
	for _, s := range resp.Steps {
		got = append(got, fmt.Sprint(s.Info().Number, ":", s.Info().ID))
	}
	if want := "[6:sum 4:a4 5:a5 8:a8]"; fmt.Sprint(got) != want {
		t.Errorf("working set %v, want %s", got, want)
	}
	_, err = st.Read(ctx, store.ReadRequest{SessionID: "s"})
	if err == nil || isStoreErr(err) || errors.Is(err, agentmem.ErrUnavailable) || !strings.Contains(err.Error(), "entry 2") {
		t.Errorf("full read over a damaged entry: %v; want an error naming entry 2, neither a contract error nor a transient one", err)
	}
}

// TestDeleteRacesWithBranchWriters: deleting a chain of sessions while
// their branches are appended to and new branches are created loses no
// history and fails nothing but the creations that come too late.
func TestDeleteRacesWithBranchWriters(t *testing.T) {
	st := openTest(t, Options{})
	ctx := context.Background()
	const prefix = 10
	if _, err := st.Create(ctx, store.CreateRequest{ID: "root"}); err != nil {
		t.Fatal(err)
	}
	var ss []agentmem.Step
	for i := 1; i <= prefix; i++ {
		ss = append(ss, action(fmt.Sprint("root-", i), "r"))
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "root", Steps: ss}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, store.CreateRequest{ID: "mid", ParentID: "root"}); err != nil {
		t.Fatal(err)
	}
	branches := []string{"b1", "b2", "b3"}
	for _, b := range branches {
		if _, err := st.Create(ctx, store.CreateRequest{ID: b, ParentID: "mid"}); err != nil {
			t.Fatal(err)
		}
	}
	const each = 15
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	for _, b := range branches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := st.Append(ctx, store.AppendRequest{SessionID: b, Steps: []agentmem.Step{action(fmt.Sprint(b, "-", i), b)}}); err != nil {
					errc <- fmt.Errorf("append to %s: %w", b, err)
					return
				}
			}
		}()
	}
	late := make(chan string, 20)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 20 {
			id := fmt.Sprint("late-", i)
			_, err := st.Create(ctx, store.CreateRequest{ID: id, ParentID: "mid"})
			switch {
			case err == nil:
				late <- id
			case errors.Is(err, agentmem.ErrNotFound):
			default:
				errc <- fmt.Errorf("create %s: %w", id, err)
			}
		}
	}()
	for _, id := range []string{"root", "mid"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(5 * time.Millisecond)
			if err := st.Delete(ctx, "", id); err != nil {
				errc <- fmt.Errorf("delete %s: %w", id, err)
			}
		}()
	}
	wg.Wait()
	close(errc)
	close(late)
	for err := range errc {
		t.Error(err)
	}
	check := func(id string, own int) {
		t.Helper()
		resp, err := st.Read(ctx, store.ReadRequest{SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Entries) != prefix+own {
			t.Fatalf("%s has %d entries, want %d", id, len(resp.Entries), prefix+own)
		}
		for i, e := range resp.Entries {
			want := fmt.Sprint("root-", i+1)
			if i >= prefix {
				want = fmt.Sprint(id, "-", i-prefix)
			}
			if e.Seq != int64(i+1) || e.Step.Info().ID != want {
				t.Fatalf("%s entry %d: seq %d step %s, want seq %d step %s", id, i, e.Seq, e.Step.Info().ID, i+1, want)
			}
		}
	}
	for _, b := range branches {
		check(b, each)
	}
	for id := range late {
		check(id, 0)
	}
	if n := queryInt(t, st, "SELECT count(*) FROM sessions WHERE id IN ('root', 'mid')"); n != 0 {
		t.Errorf("%d of the deleted sessions remain", n)
	}
}

// TestDeleteDeadlockIsRetried: Delete of a session waits for its base's
// row (the foreign key of its branches' new base) while a Delete of that
// base, which holds it, waits for the session: PostgreSQL aborts one of
// the two, and when it is the store's, the store runs its transaction
// again rather than failing. The base's Delete is played by hand here, so
// that the two meet for certain.
func TestDeleteDeadlockIsRetried(t *testing.T) {
	st := openTest(t, Options{})
	ctx := context.Background()
	for _, c := range []store.CreateRequest{{ID: "root"}, {ID: "mid", ParentID: "root"}, {ID: "leaf", ParentID: "mid"}} {
		if _, err := st.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Append(ctx, store.AppendRequest{SessionID: c.ID, Steps: []agentmem.Step{action(c.ID+"-1", c.ID)}}); err != nil {
			t.Fatal(err)
		}
	}
	// A: lock root as Delete(root) would.
	a, err := st.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rollback(a)
	execTx := func(sql string) error { _, err := a.Exec(ctx, sql); return err }
	if err := execTx("SET LOCAL deadlock_timeout = '5s'"); err != nil { // let the store's side detect it
		t.Fatal(err)
	}
	if err := execTx("SELECT 1 FROM sessions WHERE id = 'root' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- st.Delete(ctx, "", "mid") }() // waits for root (FOREIGN KEY of leaf's new base)
	time.Sleep(200 * time.Millisecond)
	// A now wants mid, which the store's Delete holds: a deadlock.
	aErr := execTx("SELECT 1 FROM sessions WHERE base_id = 'root' FOR UPDATE")
	if aErr == nil {
		// The store's transaction was the victim and released mid; let
		// its retry through.
		rollback(a)
	}
	if err := <-done; err != nil {
		t.Fatalf("Delete(mid) next to a deadlock: %v (the other side: %v)", err, aErr)
	}
	resp, err := st.Read(ctx, store.ReadRequest{SessionID: "leaf"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range resp.Entries {
		got = append(got, e.Step.Info().ID)
	}
	if fmt.Sprint(got) != "[root-1 mid-1 leaf-1]" {
		t.Errorf("leaf reads %v", got)
	}
	t.Logf("the side PostgreSQL aborted: %v", map[bool]string{true: "the store's (retried)", false: "the other"}[aErr == nil])
}
