package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/bundle"
	"github.com/agentmem/agentmem/store"
)

// seededExports seeds a store and returns it with the export of each of
// its sessions.
func seededExports(t *testing.T) (*store.Store, map[string]string) {
	t.Helper()
	url := newStoreURL(t, "src.db")
	seedSessions(t, url)
	st := openTestStore(t, url)
	out := map[string]string{}
	for _, id := range []string{"s1", "s2", "s3"} {
		out[id] = exportOf(t, st, id)
	}
	return st, out
}

// renamed returns an export with its session ID (in the header) changed.
func renamed(t *testing.T, export, id string) string {
	t.Helper()
	header, rest, _ := strings.Cut(export, "\n")
	var h map[string]json.RawMessage
	if err := json.Unmarshal([]byte(header), &h); err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(h["session"], &s); err != nil {
		t.Fatal(err)
	}
	s["id"] = id
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`{"agentmem_export":1,"session":%s}`, b) + "\n" + rest
}

// withLine returns an export with its line n (1-based) replaced.
func withLine(t *testing.T, export string, n int, line string) string {
	t.Helper()
	lines := strings.SplitAfter(export, "\n")
	if n > len(lines) {
		t.Fatalf("no line %d", n)
	}
	lines[n-1] = line + "\n"
	return strings.Join(lines, "")
}

// importReport is the parsed --json report of an import.
type importReport []importResult

func parseReport(t *testing.T, stdout string) importReport {
	t.Helper()
	var rep importReport
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	for dec.More() {
		var r importResult
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("report %q: %v", stdout, err)
		}
		rep = append(rep, r)
	}
	return rep
}

func writeFile(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A file with good and bad sessions: the good ones are imported, each bad
// one is reported with its reason and the line of the input at fault, and
// leaves nothing in the store.
func TestImportMalformedSessions(t *testing.T) {
	src, ex := seededExports(t)
	s1, s2, s3 := ex["s1"], ex["s2"], ex["s3"]

	badJSON := withLine(t, renamed(t, s1, "b1"), 3, `{"seq":2,"kind":"step","time":"2026-03-01T12:00:00Z","step":{"type":"task"`)
	badUTF8 := strings.Replace(renamed(t, s3, "c1"), "café", "caf\xff", 1)
	unknownKind := strings.Replace(renamed(t, s2, "d1"), `"type":"final_answer"`, `"type":"telepathy"`, 1)
	badEntryKind := strings.Replace(renamed(t, s2, "e1"), `"kind":"step"`, `"kind":"dream"`, 1)
	badLog := strings.Replace(renamed(t, s2, "g1"), `"seq":2,"kind":"step"`, `"seq":1,"kind":"step"`, 1)
	truncated := renamed(t, s3, "f1")
	truncated = truncated[:len(truncated)-40] // cut inside the last line

	var in strings.Builder
	for _, part := range []string{s2, badJSON, badUTF8, unknownKind, s1, "\n", badEntryKind, badLog, truncated} {
		in.WriteString(part)
	}
	lines := func(s string) int { return strings.Count(s, "\n") }
	// The line numbers of each part in the input.
	start := map[string]int{}
	n := 1
	for _, p := range []struct{ id, s string }{{"s2", s2}, {"b1", badJSON}, {"c1", badUTF8}, {"d1", unknownKind}, {"s1", s1}, {"", "\n"}, {"e1", badEntryKind}, {"g1", badLog}, {"f1", truncated}} {
		start[p.id] = n
		n += lines(p.s)
	}

	dstURL := newStoreURL(t, "dst.db")
	file := writeFile(t, in.String())
	code, stdout, stderr := runCLI(t, nil, "", "import", "--store", dstURL, "--json", file)
	if code != 1 || !strings.Contains(stderr, "agentmem import: 6 of 8 sessions failed to import") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	rep := parseReport(t, stdout)
	want := []struct {
		id     string
		status bundle.Status
		err    string
	}{
		{"s2", importImported, ""},
		{"b1", importFailed, fmt.Sprintf("line %d: ", start["b1"]+2)},
		{"c1", importFailed, "not valid UTF-8"},
		{"d1", importFailed, "telepathy"},
		{"s1", importImported, ""},
		{"e1", importFailed, `unknown entry kind "dream"`},
		{"g1", importFailed, fmt.Sprintf("line %d: agentmem: invalid entries[1].seq: 1 does not follow 1", start["g1"]+2)},
		{"f1", importFailed, fmt.Sprintf("line %d: ", start["f1"]+4)},
	}
	if len(rep) != len(want) {
		t.Fatalf("report has %d sessions, want %d:\n%s", len(rep), len(want), stdout)
	}
	for i, w := range want {
		r := rep[i]
		if r.SourceID != w.id || r.Status != w.status || !strings.Contains(r.Error, w.err) || (w.err == "") != (r.Error == "") {
			t.Errorf("session %d: %+v, want %s %s with %q", i, r, w.id, w.status, w.err)
		}
		if r.FirstLine != start[w.id] {
			t.Errorf("session %s: first line %d, want %d", w.id, r.FirstLine, start[w.id])
		}
		if w.status == importImported && r.ID != w.id {
			t.Errorf("session %s imported as %q", w.id, r.ID)
		}
	}

	// Nothing of the bad sessions is stored; the good ones are whole.
	dst := openTestStore(t, dstURL)
	if got := sessionIDs(t, dst); !reflect.DeepEqual(got, []string{"s1", "s2"}) {
		t.Fatalf("sessions after the import: %v", got)
	}
	for _, id := range []string{"b1", "c1", "d1", "e1", "f1", "g1"} {
		if _, err := dst.Get(context.Background(), "", id); !errors.Is(err, agentmem.ErrNotFound) {
			t.Errorf("failed session %s: Get = %v", id, err)
		}
	}
	sameSession(t, src, dst, "s1")
	sameSession(t, src, dst, "s2")
}

// The text report names each session, its lines and its fate.
func TestImportTextReport(t *testing.T) {
	_, ex := seededExports(t)
	in := "not an export\n" + ex["s2"] + strings.Replace(renamed(t, ex["s2"], "x"), `"type":"final_answer"`, `"type":"telepathy"`, 1)
	code, stdout, stderr := runCLI(t, nil, in, "import", "--store", newStoreURL(t, "d.db"), "-")
	if code != 1 || !strings.Contains(stderr, "2 of 3 sessions failed") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	want := []string{
		`failed    (no session header) (line 1): line 1: agentmem: invalid header: json: the text is not a JSON object`,
		`imported  s2 (lines 2-5, 3 entries)`,
		`failed    x (lines 6-9, 3 entries): line 9: step: `,
		`1 session imported (3 entries), 2 failed, 0 skipped`,
	}
	got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("report:\n%s", stdout)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("report line %d:\n got %q\nwant %q...", i+1, got[i], want[i])
		}
	}
}

// A file cut at a line boundary parses, but its log ends before the
// header's last_seq: the session is refused as truncated, unless
// --allow-short-log.
func TestImportTruncatedAtLineBoundary(t *testing.T) {
	_, ex := seededExports(t)
	s1 := ex["s1"]
	cut := strings.Join(strings.SplitAfter(s1, "\n")[:6], "") // header and 5 of 8 entries
	headerOnly := renamed(t, strings.SplitAfter(ex["s2"], "\n")[0], "h")
	dstURL := newStoreURL(t, "d.db")
	code, stdout, _ := runCLI(t, nil, cut+headerOnly, "import", "--store", dstURL, "--json")
	rep := parseReport(t, stdout)
	if code != 1 || len(rep) != 2 ||
		rep[0].Status != importFailed || !strings.Contains(rep[0].Error, "the log ends at seq 5 but the header's last_seq is 8: the input looks truncated") ||
		rep[1].Status != importFailed || !strings.Contains(rep[1].Error, "the log ends with no entry but the header's last_seq is 3") {
		t.Fatalf("exit %d: %s", code, stdout)
	}
	if ids := sessionIDs(t, openTestStore(t, dstURL)); len(ids) != 0 {
		t.Fatalf("a truncated session was imported: %v", ids)
	}
	code, stdout, _ = runCLI(t, nil, cut, "import", "--store", dstURL, "--json", "--allow-short-log")
	if rep := parseReport(t, stdout); code != 0 || len(rep) != 1 || rep[0].Status != importImported || rep[0].Entries != 5 {
		t.Fatalf("--allow-short-log: exit %d: %s", code, stdout)
	}
}

func TestImportConflicts(t *testing.T) {
	src, ex := seededExports(t)
	in := ex["s1"] + ex["s2"]
	dstURL := newStoreURL(t, "d.db")
	env := map[string]string{"AGENTMEM_STORE": dstURL}
	if code, _, stderr := runCLI(t, env, in, "import"); code != 0 {
		t.Fatalf("first import: exit %d: %s", code, stderr)
	}
	// Again: every ID is in use.
	code, stdout, stderr := runCLI(t, env, in, "import", "--json")
	rep := parseReport(t, stdout)
	if code != 1 || len(rep) != 2 || rep[0].Status != importFailed || !strings.Contains(rep[0].Error, "the ID is in use") ||
		!strings.Contains(stderr, "2 of 2 sessions failed") {
		t.Fatalf("re-import: exit %d: %s %s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, env, in, "import", "--on-conflict", "skip")
	if code != 0 || !strings.Contains(stdout, "skipped   s1 (lines 1-9, 8 entries): the ID is in use") ||
		!strings.Contains(stdout, "0 sessions imported (0 entries), 0 failed, 2 skipped") {
		t.Fatalf("--on-conflict skip: exit %d: %s", code, stdout)
	}
	dst := openTestStore(t, dstURL)
	if ids := sessionIDs(t, dst); !reflect.DeepEqual(ids, []string{"s1", "s2"}) {
		t.Fatalf("sessions: %v", ids)
	}
	// new-id on conflict, and --new-ids: copies under new IDs, whole.
	for _, args := range [][]string{{"--on-conflict", "new-id"}, {"--new-ids"}} {
		code, stdout, _ = runCLI(t, env, in, append([]string{"import", "--json"}, args...)...)
		rep = parseReport(t, stdout)
		if code != 0 || len(rep) != 2 {
			t.Fatalf("%v: exit %d: %s", args, code, stdout)
		}
		for _, r := range rep {
			if r.Status != importImported || r.ID == r.SourceID || store.ValidateID(r.ID) != nil {
				t.Errorf("%v: %+v", args, r)
			}
			want := exportOf(t, src, r.SourceID)
			got := exportOf(t, dst, r.ID)
			if strings.Replace(got, `"id":"`+r.ID+`"`, `"id":"`+r.SourceID+`"`, 1) != want {
				t.Errorf("%v: the copy %s of %s differs:\n%s\nwant\n%s", args, r.ID, r.SourceID, got, want)
			}
		}
	}
	if ids := sessionIDs(t, dst); len(ids) != 6 {
		t.Fatalf("sessions: %v", ids)
	}
}

// TestImportIntoTenant: --tenant puts every session into that tenant, where
// its keys reach them, whatever tenant they were exported from.
func TestImportIntoTenant(t *testing.T) {
	src, ex := seededExports(t)
	dstURL := newStoreURL(t, "t.db")
	env := map[string]string{"AGENTMEM_STORE": dstURL}
	code, stdout, stderr := runCLI(t, env, ex["s1"]+ex["s2"], "import", "--json", "--tenant", "acme")
	rep := parseReport(t, stdout)
	if code != 0 || len(rep) != 2 {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	dst := openTestStore(t, dstURL)
	for _, r := range rep {
		if r.Status != importImported || r.Tenant != "acme" || r.ID != r.SourceID {
			t.Errorf("%+v, want %s imported into acme", r, r.SourceID)
		}
		got, err := dst.Get(context.Background(), "acme", r.ID)
		if err != nil {
			t.Fatalf("%s in acme: %v", r.ID, err)
		}
		want, err := src.Get(context.Background(), "", r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.LastSeq != want.LastSeq || got.UserID != want.UserID {
			t.Errorf("%s in acme: %+v, want the exported %+v", r.ID, got, want)
		}
		if _, err := dst.Get(context.Background(), "", r.ID); !errors.Is(err, agentmem.ErrNotFound) {
			t.Errorf("%s is in the default tenant too: %v", r.ID, err)
		}
	}
	if code, _, stderr := runCLI(t, env, ex["s3"], "import", "--tenant", "-bad"); code != 2 || !strings.Contains(stderr, "--tenant") {
		t.Errorf("a bad tenant: exit %d: %s", code, stderr)
	}
}

func TestImportUsageAndInputErrors(t *testing.T) {
	_, ex := seededExports(t)
	dstURL := newStoreURL(t, "d.db")
	env := map[string]string{"AGENTMEM_STORE": dstURL}
	for _, tc := range []struct {
		args   []string
		stdin  string
		code   int
		stderr string
	}{
		{[]string{"import", "--on-conflict", "merge"}, "", 2, `--on-conflict "merge"`},
		{[]string{"import", "--progress", "--no-progress"}, "", 2, "contradict"},
		{[]string{"import", "--max-line-bytes", "0"}, "", 2, "--max-line-bytes"},
		{[]string{"import", "a", "b"}, "", 2, "accepts at most 1 arg"},
		{[]string{"import", "--store", "mem://"}, ex["s2"], 2, "mem://"},
		{[]string{"import", filepath.Join(t.TempDir(), "missing.jsonl")}, "", 1, "no such file"},
		{[]string{"import"}, "", 1, "standard input holds no sessions"},
		{[]string{"import", "-"}, "\n\n", 1, "holds no sessions"},
	} {
		code, stdout, stderr := runCLI(t, env, tc.stdin, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit %d and %q", tc.args, code, stderr, stdout, tc.code, tc.stderr)
		}
	}
}

// A line over --max-line-bytes fails its session only.
func TestImportLineLimit(t *testing.T) {
	_, ex := seededExports(t)
	dstURL := newStoreURL(t, "d.db")
	code, stdout, _ := runCLI(t, nil, ex["s1"]+ex["s2"], "import", "--store", dstURL, "--json", "--max-line-bytes", "1000")
	rep := parseReport(t, stdout)
	if code != 1 || len(rep) != 2 || rep[0].Status != importFailed || rep[0].Error != "line 5: is longer than 1000 bytes (see --max-line-bytes)" ||
		rep[0].LastLine != 9 || rep[1].Status != importImported || rep[1].FirstLine != 10 {
		t.Fatalf("exit %d: %s", code, stdout)
	}
}

func TestImportProgressBar(t *testing.T) {
	_, ex := seededExports(t)
	file := writeFile(t, ex["s1"]+ex["s2"])
	for _, tc := range []struct {
		args []string
		env  map[string]string
		bar  bool
	}{
		{[]string{"--progress"}, nil, true},
		{nil, map[string]string{"AGENTMEM_PROGRESS": "true"}, true},
		{nil, nil, false}, // stderr is not a terminal
		{[]string{"--no-progress"}, nil, false},
	} {
		args := append([]string{"import", "--store", newStoreURL(t, "d.db"), file}, tc.args...)
		code, _, stderr := runCLI(t, tc.env, "", args...)
		if code != 0 || strings.Contains(stderr, "importing") != tc.bar {
			t.Errorf("%v %v: exit %d, want bar %v, stderr %q", tc.args, tc.env, code, tc.bar, stderr)
		}
		if tc.bar && !strings.Contains(stderr, "|") {
			t.Errorf("no bar drawn: %q", stderr)
		}
	}
}

// The checked-in files import, and export as the checked-in bundle (but
// for its header's time): sessions.jsonl, sessions alone as export wrote
// them before bundles (format version 1), and bundle.jsonl itself. The
// formats this version reads and writes stay so.
func TestImportTestdataRoundTrip(t *testing.T) {
	want, err := os.ReadFile("testdata/import/bundle.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	body := func(b string) string {
		header, rest, _ := strings.Cut(b, "\n")
		if !strings.HasPrefix(header, `{"agentmem_export":2,"bundle":{"exported_at":"`) {
			t.Fatalf("not a bundle's header: %s", header)
		}
		return rest
	}
	for _, in := range []string{"testdata/import/sessions.jsonl", "testdata/import/bundle.jsonl"} {
		env := map[string]string{"AGENTMEM_STORE": newStoreURL(t, "a.db"), "AGENTMEM_LOG_LEVEL": "warn"}
		code, stdout, stderr := runCLI(t, env, "", "import", in)
		if code != 0 || !strings.Contains(stdout, "3 sessions imported (15 entries), 0 failed, 0 skipped") {
			t.Fatalf("import %s: exit %d: %s %s", in, code, stdout, stderr)
		}
		code, stdout, stderr = runCLI(t, env, "", "export", "--all")
		if code != 0 || body(stdout) != body(string(want)) {
			t.Fatalf("export after importing %s: exit %d: %s\n%s\nwant\n%s", in, code, stderr, stdout, want)
		}
	}
}

// The checked-in file of broken sessions: each is reported, only the
// good one is stored.
func TestImportMalformedTestdata(t *testing.T) {
	dstURL := newStoreURL(t, "a.db")
	code, stdout, stderr := runCLI(t, nil, "", "import", "--store", dstURL, "testdata/import/malformed.jsonl")
	if code != 1 || !strings.Contains(stderr, "6 of 7 sessions failed to import") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := []string{
		`failed    (no session header) (line 1): line 1: agentmem: invalid header: json: the text is not a JSON object (want {"agentmem_export":1,"session":{...}})`,
		"imported  s2 (lines 2-5, 3 entries)",
		"failed    bad-json (lines 6-14, 8 entries): line 8: agentmem: invalid entry: json: the text is malformed JSON: it ends before the value does",
		"failed    bad-utf8 (lines 15-19, 4 entries): line 17: agentmem: invalid entry: json: step.task is not valid UTF-8 (byte 148)",
		`failed    unknown-kind (lines 20-23, 3 entries): line 23: step: agentmem: invalid type: unknown step type "telepathy"`,
		"failed    short-log (lines 25-29, 4 entries): the log ends at seq 4 but the header's last_seq is 8: the input looks truncated (--allow-short-log imports it anyway)",
		"failed    cut (lines 30-34, 4 entries): line 34: agentmem: invalid entry: json: the text is malformed JSON: it ends before the value does",
		"1 session imported (3 entries), 6 failed, 0 skipped",
	}
	if got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"); !reflect.DeepEqual(got, want) {
		t.Fatalf("report:\n%s\nwant\n%s", stdout, strings.Join(want, "\n"))
	}
	if ids := sessionIDs(t, openTestStore(t, dstURL)); !reflect.DeepEqual(ids, []string{"s2"}) {
		t.Fatalf("sessions: %v", ids)
	}
}
