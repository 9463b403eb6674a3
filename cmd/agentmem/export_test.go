package main

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// newStoreURL returns the URL of a new SQLite store in a temporary
// directory.
func newStoreURL(t *testing.T, name string) string {
	t.Helper()
	return "sqlite://" + filepath.Join(t.TempDir(), name)
}

// openTestStore opens the store at url, closed when the test ends.
func openTestStore(t *testing.T, url string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// seedSessions fills the store at url with sessions that use every part
// of the export format, and closes it:
//   - s1 (tenant acme, user alice, agent coder): a system prompt, a task,
//     three actions, a summary with a compaction holding a truncated copy,
//     and an action after it;
//   - s2 (default tenant, user bob, persistent): a system prompt, a task
//     and a final answer;
//   - s3: a branch of s1 at seq 3, with a step of its own.
func seedSessions(t *testing.T, url string) {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	seedSessionsInto(t, st)
}

// seedSessionsInto creates seedSessions's sessions in st.
func seedSessionsInto(t *testing.T, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	mustCreate := func(req store.CreateRequest) {
		t.Helper()
		if _, err := st.Create(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	mustAppend := func(req store.AppendRequest) {
		t.Helper()
		if _, err := st.Append(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	info := func(id string) agentmem.StepInfo { return agentmem.StepInfo{ID: id} }
	action := func(id, tool, result string) *agentmem.ActionStep {
		return &agentmem.ActionStep{
			StepInfo:  info(id),
			Thought:   "I should call " + tool,
			ToolCalls: []agentmem.ToolCall{{ID: "call-" + id, Name: tool, Arguments: `{"path":"main.go"}`}},
			Results:   []agentmem.ToolResult{{CallID: "call-" + id, Content: result}},
		}
	}

	mustCreate(store.CreateRequest{ID: "s1", UserID: "alice", Agent: "coder", Metadata: map[string]string{"project": "billing"}})
	big := action("a2", "grep", strings.Repeat("orders table locked by migration 42; ", 40))
	mustAppend(store.AppendRequest{SessionID: "s1", Steps: []agentmem.Step{
		&agentmem.SystemPromptStep{StepInfo: info("sys"), Content: "You are a careful coding agent."},
		&agentmem.TaskStep{StepInfo: info("task"), Task: "Find why the staging deploy failed — café ☕"},
		action("a1", "read_file", "package main\n\nfunc main() {}\n"),
		big,
		action("a3", "run_tests", "FAIL: TestOrders (0.02s)"),
	}})
	trunc := store.WithNumber(big.Truncate(40), 4)
	mustAppend(store.AppendRequest{SessionID: "s1",
		Steps: []agentmem.Step{&agentmem.SummaryStep{StepInfo: info("sum"), Summary: "Read main.go; nothing wrong there.", Covers: []agentmem.Range{{From: 3, To: 3}}}},
		Compaction: &store.CompactionRecord{
			Working:  []int64{1, 2, store.NewStepRef(0), 4, 5},
			Replaced: []agentmem.Step{trunc},
			Removed:  []int64{3},
		}})
	mustAppend(store.AppendRequest{SessionID: "s1", Steps: []agentmem.Step{action("a4", "edit_file", "ok")}})

	mustCreate(store.CreateRequest{ID: "s2", UserID: "bob", Agent: "helper", Retention: store.Persistent})
	mustAppend(store.AppendRequest{SessionID: "s2", Steps: []agentmem.Step{
		&agentmem.SystemPromptStep{StepInfo: info("sys"), Content: "Be brief."},
		&agentmem.TaskStep{StepInfo: info("task"), Task: "What is 2+2?"},
		&agentmem.FinalAnswerStep{StepInfo: info("fa"), Answer: "4"},
	}})

	mustCreate(store.CreateRequest{ID: "s3", UserID: "alice", Agent: "coder", ParentID: "s1", ForkSeq: 3})
	mustAppend(store.AppendRequest{SessionID: "s3", Steps: []agentmem.Step{action("b1", "git_log", "3 commits")}})
}

// exportOf returns store.Export's bytes of a session.
func exportOf(t *testing.T, st *store.Store, id string) string {
	t.Helper()
	var b bytes.Buffer
	if err := store.Export(context.Background(), st, "", id, &b); err != nil {
		t.Fatalf("export %s: %v", id, err)
	}
	return b.String()
}

// sameSession checks that a session was recreated exactly: its metadata
// (a branch without its parent: an export carries its whole history) and
// every entry of its log, the steps' stored JSON byte for byte.
func sameSession(t *testing.T, src, dst *store.Store, id string) {
	t.Helper()
	ctx := context.Background()
	a, err := src.Read(ctx, store.ReadRequest{SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	b, err := dst.Read(ctx, store.ReadRequest{SessionID: id})
	if err != nil {
		t.Fatalf("session %s after import: %v", id, err)
	}
	want := a.Session.Clone()
	want.ParentID, want.ForkSeq = "", 0
	if !reflect.DeepEqual(want, b.Session) {
		t.Errorf("session %s:\n got %+v\nwant %+v", id, b.Session, want)
	}
	if len(a.Entries) != len(b.Entries) || len(a.Entries) == 0 {
		t.Fatalf("session %s: %d entries, want %d", id, len(b.Entries), len(a.Entries))
	}
	for i := range a.Entries {
		x, y := a.Entries[i], b.Entries[i]
		if x.Seq != y.Seq || x.Kind != y.Kind || !x.Time.Equal(y.Time) {
			t.Errorf("session %s entry %d: %+v, want %+v", id, i, y, x)
		}
		switch x.Kind {
		case store.StepEntry:
			xs, _ := store.EncodeStep(x.Step)
			ys, _ := store.EncodeStep(y.Step)
			if !bytes.Equal(xs, ys) {
				t.Errorf("session %s seq %d: step %s, want %s", id, x.Seq, ys, xs)
			}
		case store.CompactionEntry:
			xc, _ := store.EncodeCompaction(x.Compaction)
			yc, _ := store.EncodeCompaction(y.Compaction)
			if !bytes.Equal(xc, yc) {
				t.Errorf("session %s seq %d: compaction %s, want %s", id, x.Seq, yc, xc)
			}
		}
	}
	if got, want := exportOf(t, dst, id), exportOf(t, src, id); got != want {
		t.Errorf("session %s exports differently after the round trip:\n%s\nwant\n%s", id, got, want)
	}
}

// sessionIDs lists the IDs of every session of a store, sorted.
func sessionIDs(t *testing.T, st *store.Store) []string {
	t.Helper()
	resp, err := st.List(context.Background(), store.ListRequest{PageSize: store.MaxPageSize})
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

func TestExportImportRoundTrip(t *testing.T) {
	srcURL, dstURL := newStoreURL(t, "src.db"), newStoreURL(t, "dst.db")
	seedSessions(t, srcURL)
	file := filepath.Join(t.TempDir(), "backup.jsonl")

	code, stdout, stderr := runCLI(t, map[string]string{"AGENTMEM_STORE": srcURL}, "", "export", "--all", "-o", file)
	if code != 0 || stdout != "" || !strings.Contains(stderr, "sessions=3") {
		t.Fatalf("export: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), `{"agentmem_export":2,`) || strings.Count(string(data), `{"session":`) != 3 {
		t.Fatalf("the export is not a bundle of 3 sessions:\n%s", data)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("export file mode: %v %v", fi.Mode(), err)
	}

	code, stdout, stderr = runCLI(t, nil, "", "import", "--store", dstURL, file)
	if code != 0 {
		t.Fatalf("import: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	for _, want := range []string{"imported  s1 (lines ", "imported  s2 (lines ", "imported  s3 (lines ", "3 sessions imported (15 entries), 0 failed, 0 skipped"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("import report lacks %q:\n%s", want, stdout)
		}
	}
	src, dst := openTestStore(t, srcURL), openTestStore(t, dstURL)
	if got := sessionIDs(t, dst); !reflect.DeepEqual(got, []string{"s1", "s2", "s3"}) {
		t.Fatalf("sessions after import: %v", got)
	}
	for _, id := range []string{"s1", "s2", "s3"} {
		sameSession(t, src, dst, id)
	}

	// The imported sessions are indexed for recall.
	code, stdout, stderr = runCLI(t, nil, "", "recall", "search", "orders table locked", "--store", dstURL, "--k", "1")
	if code != 0 || !strings.Contains(stdout, `"session_id":"s`) {
		t.Errorf("recall search after import: exit %d, %q %q", code, stdout, stderr)
	}
}

// Named sessions export to stdout, each once, and import back from
// stdin.
func TestExportNamedToStdoutImportFromStdin(t *testing.T) {
	srcURL, dstURL := newStoreURL(t, "src.db"), newStoreURL(t, "dst.db")
	seedSessions(t, srcURL)
	code, stdout, stderr := runCLI(t, nil, "", "export", "--store", srcURL, "s2", "s1", "s2", "--log-level", "warn")
	if code != 0 || stderr != "" {
		t.Fatalf("export: exit %d, %q", code, stderr)
	}
	if got := sessionLines(stdout); !reflect.DeepEqual(got, []string{"s2", "s1"}) {
		t.Fatalf("export of s2 s1 s2 holds sessions %v, want s2 and s1, each once:\n%s", got, stdout)
	}
	code, out, stderr := runCLI(t, nil, stdout, "import", "--store", dstURL, "-", "--json")
	if code != 0 {
		t.Fatalf("import: exit %d, %q %q", code, out, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"kind":"session","status":"imported","id":"s2","source_id":"s2","entries":3,"first_line":2,"last_line":5`) ||
		!strings.Contains(lines[1], `"kind":"session","status":"imported","id":"s1","source_id":"s1","entries":8,"first_line":6,"last_line":14`) {
		t.Fatalf("import --json:\n%s", out)
	}
	src, dst := openTestStore(t, srcURL), openTestStore(t, dstURL)
	sameSession(t, src, dst, "s1")
	sameSession(t, src, dst, "s2")
}

// sessionLines returns the IDs of the sessions of a bundle, in order.
func sessionLines(bundle string) []string {
	var ids []string
	for _, l := range strings.Split(bundle, "\n") {
		if rest, ok := strings.CutPrefix(l, `{"session":{"id":"`); ok {
			ids = append(ids, strings.SplitN(rest, `"`, 2)[0])
		}
	}
	return ids
}

func TestExportSelection(t *testing.T) {
	url := newStoreURL(t, "a.db")
	seedSessions(t, url)
	// Session IDs are per tenant: acme has an s1 of its own.
	st := openTestStore(t, url)
	if _, err := st.Create(context.Background(), store.CreateRequest{ID: "s1", Tenant: "acme", UserID: "carol"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	env := map[string]string{"AGENTMEM_STORE": url, "AGENTMEM_LOG_LEVEL": "warn"}
	headers := func(out string) []string {
		ids := sessionLines(out)
		slices.Sort(ids)
		return ids
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--all"}, []string{"s1", "s1", "s2", "s3"}},
		{[]string{"--all", "--tenant", "acme"}, []string{"s1"}},
		{[]string{"--user", "bob"}, []string{"s2"}},
		{[]string{"--agent", "coder"}, []string{"s1", "s3"}},
		{[]string{"--user", "dave"}, nil},
		{[]string{"--user", "carol"}, []string{"s1"}},
		{[]string{"s1", "--tenant", "acme"}, []string{"s1"}},
		{[]string{"s3"}, []string{"s3"}},
	} {
		code, stdout, stderr := runCLI(t, env, "", append([]string{"export"}, tc.args...)...)
		if code != 0 || !reflect.DeepEqual(headers(stdout), tc.want) {
			t.Errorf("export %v: exit %d, sessions %v, want %v (%s)", tc.args, code, headers(stdout), tc.want, stderr)
		}
	}
	if _, stdout, _ := runCLI(t, env, "", "export", "s1", "--tenant", "acme"); !strings.Contains(stdout, `"tenant":"acme","user_id":"carol"`) {
		t.Errorf("export s1 --tenant acme is not acme's s1: %s", stdout)
	}
}

func TestExportErrors(t *testing.T) {
	url := newStoreURL(t, "a.db")
	seedSessions(t, url)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	env := map[string]string{"AGENTMEM_STORE": url}
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"export"}, 2, "name the sessions to export, or give --all"},
		{[]string{"export", "s1", "--all"}, 2, "not both"},
		{[]string{"export", "a\tb"}, 2, `SESSION "a\tb"`},
		{[]string{"export", "s1", "nope", "-o", out}, 1, `session "nope" not found`},
		{[]string{"export", "s2", "--tenant", "acme", "-o", out}, 1, `session "s2" not found`},
		{[]string{"export", "--all", "--store", "mem://"}, 2, "mem://"},
		{[]string{"export", "--all", "-o", filepath.Join(dir, "missing", "out.jsonl")}, 1, "no such file or directory"},
	} {
		code, stdout, stderr := runCLI(t, env, "", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit %d and %q", tc.args, code, stderr, stdout, tc.code, tc.stderr)
		}
	}
	// Nothing was written: no output file, no temporary file left behind.
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left after failed exports: %v", entries)
	}
}

// The output file is replaced only once the export is complete.
func TestExportReplacesFileAtomically(t *testing.T) {
	url := newStoreURL(t, "a.db")
	seedSessions(t, url)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	if err := os.WriteFile(out, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := runCLI(t, nil, "", "export", "--store", url, "s1", "missing", "-o", out); code != 1 {
		t.Fatalf("exit %d", code)
	}
	if data, _ := os.ReadFile(out); string(data) != "old\n" {
		t.Fatalf("a failed export changed the file: %q", data)
	}
	if code, _, _ := runCLI(t, nil, "", "export", "--store", url, "s2", "-o", out); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if data, _ := os.ReadFile(out); !strings.HasPrefix(string(data), `{"agentmem_export":2,`) || !reflect.DeepEqual(sessionLines(string(data)), []string{"s2"}) {
		t.Fatalf("export: %q", data)
	}
}

func TestExportProgressBar(t *testing.T) {
	url := newStoreURL(t, "a.db")
	seedSessions(t, url)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	code, _, stderr := runCLI(t, nil, "", "export", "--store", url, "--all", "-o", out, "--progress")
	if code != 0 || !strings.Contains(stderr, "exporting") || !strings.Contains(stderr, "(1/3)") {
		t.Errorf("--progress: exit %d, %q", code, stderr)
	}
	// Not a terminal, and few sessions: no bar.
	code, _, stderr = runCLI(t, nil, "", "export", "--store", url, "--all", "-o", out)
	if code != 0 || strings.Contains(stderr, "exporting") {
		t.Errorf("no --progress: exit %d, %q", code, stderr)
	}
	code, _, stderr = runCLI(t, nil, "", "export", "--store", url, "--all", "--progress", "--no-progress")
	if code != 2 || !strings.Contains(stderr, "contradict") {
		t.Errorf("--progress --no-progress: exit %d, %q", code, stderr)
	}
}

// A session whose stored record does not decode does not stop a backup:
// export --all writes every healthy session, to the file, names the
// damaged ones on stderr and exits 1; the file imports back whole.
func TestExportAllPastDamagedSession(t *testing.T) {
	url := newStoreURL(t, "a.db")
	seedSessions(t, url)
	db, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(url, "sqlite://"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE sessions SET metadata = '{"m":' WHERE id = 's2'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out := filepath.Join(t.TempDir(), "backup.jsonl")
	code, stdout, stderr := runCLI(t, map[string]string{"AGENTMEM_STORE": url}, "", "export", "--all", "-o", out)
	if code != 1 || stdout != "" || !strings.Contains(stderr, `damaged`) || !strings.Contains(stderr, `"s2"`) || !strings.Contains(stderr, "sessions=2") {
		t.Fatalf("export: exit %d, stdout %q, stderr %q; want exit 1 naming s2", code, stdout, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the healthy sessions were not written: %v", err)
	}
	if got := sessionLines(string(data)); len(got) != 2 || slices.Contains(got, "s2") {
		t.Fatalf("the export holds sessions %v, want s1 and s3:\n%s", got, data)
	}
	dstURL := newStoreURL(t, "dst.db")
	if code, stdout, stderr := runCLI(t, nil, "", "import", "--store", dstURL, out); code != 0 {
		t.Fatalf("import: exit %d, %q %q", code, stdout, stderr)
	}
	src, dst := openTestStore(t, url), openTestStore(t, dstURL)
	sameSession(t, src, dst, "s1")
	sameSession(t, src, dst, "s3")
}
