package main

import (
	"context"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
)

// visualizeFor is the library's picture of a session's working set, as
// a memory restored from the store draws it.
func visualizeFor(t *testing.T, st *store.Store, id, format, counter string) string {
	t.Helper()
	f, err := render.ByName(format)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tokenizer.Get(counter)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := st.Read(context.Background(), store.ReadRequest{SessionID: id, WorkingSet: true})
	if err != nil {
		t.Fatal(err)
	}
	m := agentmem.New(agentmem.Options{Format: f, Counter: c})
	if err := m.Restore(&agentmem.Snapshot{Version: agentmem.SnapshotVersion, NextNumber: int(resp.Session.LastSeq) + 1, Steps: resp.Steps}); err != nil {
		t.Fatal(err)
	}
	return m.Visualize()
}

func TestInspect(t *testing.T) {
	url := newStoreURL(t, "a.db")
	seedSessions(t, url)
	env := map[string]string{"AGENTMEM_STORE": url}
	code, stdout, stderr := runCLI(t, env, "", "inspect", "s1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	st := openTestStore(t, url)
	vis := visualizeFor(t, st, "s1", "openai", "o200k_base")
	if !strings.Contains(stdout, vis) {
		t.Errorf("inspect does not show Memory.Visualize's picture:\n%s\nwant it to contain\n%s", stdout, vis)
	}
	for _, re := range []string{
		`(?m)^Session s1$`,
		`(?m)^  tenant     -$`,
		`(?m)^  user       alice$`,
		`(?m)^  agent      coder$`,
		`(?m)^  log        last seq 8$`,
		`(?m)^  metadata   project="billing"$`,
		// The working set after the compaction: step 3 summarized, step
		// 4 a truncated copy; every step with its token cost.
		`(?m)^Memory: 6 steps \(3 actions\), [0-9,]+ tokens \[openai, o200k_base\]$`,
		`(?m)^\* #1 +system_prompt +[1-9][0-9]* tok$`,
		`(?m)^\* #2 +task +[1-9][0-9]* tok$`,
		`(?m)^\* #6 +summary +[1-9][0-9]* tok  covers 3$`,
		`(?m)^  #4 +action +[1-9][0-9]* tok  grep  obs [0-9]+ chars$`,
		`(?m)^  #8 +action +[1-9][0-9]* tok  edit_file  obs 2 chars$`,
	} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("inspect output lacks %s:\n%s", re, stdout)
		}
	}
	if strings.Contains(stdout, "#3 ") || strings.Contains(stdout, "Context at budget") {
		t.Errorf("inspect shows a step the compaction removed, or a context it was not asked for:\n%s", stdout)
	}

	// Another format and counter change the counts as the library's do.
	code, stdout, _ = runCLI(t, env, "", "inspect", "s1", "--format", "anthropic", "--tokenizer", "heuristic")
	if vis := visualizeFor(t, st, "s1", "anthropic", "heuristic"); code != 0 || !strings.Contains(stdout, vis) || !strings.Contains(vis, "[anthropic, heuristic]") {
		t.Errorf("inspect --format anthropic --tokenizer heuristic: exit %d\n%s\nwant\n%s", code, stdout, vis)
	}

	// inspect only reads: a second look is the same, and the session is
	// unchanged.
	before, _ := st.Get(context.Background(), "", "s1")
	_, again, _ := runCLI(t, env, "", "inspect", "s1")
	_, stdout, _ = runCLI(t, env, "", "inspect", "s1")
	after, _ := st.Get(context.Background(), "", "s1")
	if again != stdout || before.LastSeq != after.LastSeq || !before.UpdatedAt.Equal(after.UpdatedAt) {
		t.Errorf("inspect changed something")
	}
}

// TestInspectJSON: --json prints the session, the working set the library
// describes and the context it renders, as data.
func TestInspectJSON(t *testing.T) {
	url := newStoreURL(t, "a.db")
	seedSessions(t, url)
	env := map[string]string{"AGENTMEM_STORE": url}
	code, stdout, stderr := runCLI(t, env, "", "inspect", "s1", "--json", "--budget", "100")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Session     store.Session     `json:"session"`
		WorkingSet  agentmem.Overview `json:"working_set"`
		Context     *agentmem.Context `json:"context"`
		BudgetError json.RawMessage   `json:"budget_error"`
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	st := openTestStore(t, url)
	resp, err := st.Read(context.Background(), store.ReadRequest{SessionID: "s1", WorkingSet: true})
	if err != nil {
		t.Fatal(err)
	}
	m := agentmem.New(agentmem.Options{})
	if err := m.Restore(&agentmem.Snapshot{Version: agentmem.SnapshotVersion, NextNumber: int(resp.Session.LastSeq) + 1, Steps: resp.Steps}); err != nil {
		t.Fatal(err)
	}
	if want := m.Overview(); !reflect.DeepEqual(got.WorkingSet, want) {
		t.Errorf("working_set %+v, want the library's %+v", got.WorkingSet, want)
	}
	if got.Session.ID != "s1" || got.Session.UserID != "alice" || got.Session.LastSeq != 8 {
		t.Errorf("session %+v", got.Session)
	}
	if got.Context == nil || !reflect.DeepEqual(got.Context.Steps, []int{1, 2, 6, 8}) || got.BudgetError != nil {
		t.Errorf("context %+v, budget error %s; want steps 1, 2, 6 and 8", got.Context, got.BudgetError)
	}
	// Too small a budget is data too.
	_, stdout, _ = runCLI(t, env, "", "inspect", "s1", "--json", "--budget", "10")
	if !strings.Contains(stdout, `"budget_error": {`) || !strings.Contains(stdout, `"required": `) || strings.Contains(stdout, `"context"`) {
		t.Errorf("--budget 10:\n%s", stdout)
	}
	if code, _, stderr := runCLI(t, env, "", "inspect", "s1", "--json", "--detail"); code != 2 || !strings.Contains(stderr, "--detail") {
		t.Errorf("--json --detail: exit %d: %s", code, stderr)
	}
}

func TestInspectBudget(t *testing.T) {
	url := newStoreURL(t, "a.db")
	seedSessions(t, url)
	env := map[string]string{"AGENTMEM_STORE": url}

	// Room for everything.
	code, stdout, _ := runCLI(t, env, "", "inspect", "s1", "--budget", "8000")
	want := regexp.MustCompile(`(?m)^Context at budget 8,000 \[openai, o200k_base\]: ([0-9,]+) tokens in 9 messages, 6 of 6 steps shown\n  shown       #1-#2, #6, #4-#5, #8\n  summarized  #3\n\z`)
	m := want.FindStringSubmatch(stdout)
	if code != 0 || m == nil {
		t.Fatalf("inspect --budget 8000: exit %d\n%s", code, stdout)
	}
	// The whole working set fits: the context costs what Visualize says.
	if !strings.Contains(stdout, "), "+m[1]+" tokens [openai, o200k_base]") {
		t.Errorf("the context's %s tokens are not the memory's total:\n%s", m[1], stdout)
	}

	// A tight budget keeps the pinned steps (the summary among them) and
	// the newest that fit.
	code, stdout, _ = runCLI(t, env, "", "inspect", "s1", "--budget", "100")
	if code != 0 || !regexp.MustCompile(`(?m)^Context at budget 100 \[openai, o200k_base\]: [0-9]+ tokens in [0-9]+ messages, 4 of 6 steps shown\n  shown       #1-#2, #6, #8\n  dropped     #4, #5\n`).MatchString(stdout) {
		t.Fatalf("inspect --budget 100: exit %d\n%s", code, stdout)
	}
	// Truncation fills the budget with the newest step that did not fit.
	code, stdout, _ = runCLI(t, env, "", "inspect", "s1", "--budget", "148", "--truncate")
	if code != 0 || !regexp.MustCompile(`(?m)^  truncated   #4$`).MatchString(stdout) {
		t.Fatalf("inspect --budget 148 --truncate: exit %d\n%s", code, stdout)
	}
	// Too small for the pinned steps: said, not failed.
	code, stdout, _ = runCLI(t, env, "", "inspect", "s1", "--budget", "10")
	if code != 0 || !regexp.MustCompile(`(?m)^Context at budget 10 \[openai, o200k_base\]: does not fit: the pinned system prompt and task need [0-9]+ tokens$`).MatchString(stdout) {
		t.Fatalf("inspect --budget 10: exit %d\n%s", code, stdout)
	}
}

func TestInspectDetailAndBranch(t *testing.T) {
	url := newStoreURL(t, "a.db")
	seedSessions(t, url)
	env := map[string]string{"AGENTMEM_STORE": url}
	code, stdout, _ := runCLI(t, env, "", "inspect", "s1", "--detail")
	for _, want := range []string{
		"        system    You are a careful coding agent.\n",
		"        user      Find why the staging deploy failed — café ☕\n",
		"        tool      orders table locked by migration 42; ord",
	} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("inspect --detail: exit %d, lacks %q:\n%s", code, want, stdout)
		}
	}
	code, stdout, _ = runCLI(t, env, "", "inspect", "s3")
	if code != 0 || !strings.Contains(stdout, "  log        last seq 4, a branch of s1 at seq 3\n") ||
		!strings.Contains(stdout, "Memory: 4 steps (2 actions)") || !strings.Contains(stdout, "git_log") {
		t.Errorf("inspect of a branch: exit %d\n%s", code, stdout)
	}
}

func TestInspectErrors(t *testing.T) {
	url := newStoreURL(t, "a.db")
	seedSessions(t, url)
	env := map[string]string{"AGENTMEM_STORE": url}
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"inspect", "nope"}, 1, `agentmem inspect: session "nope" not found`},
		{[]string{"inspect", "s1", "--tenant", "globex"}, 1, `agentmem inspect: session "s1" not found`},
		{[]string{"inspect", "s2", "--tenant", "acme"}, 1, `session "s2" not found`},
		{[]string{"inspect", ".."}, 2, `SESSION ".."`},
		{[]string{"inspect"}, 2, "accepts 1 arg(s), received 0"},
		{[]string{"inspect", "s1", "s2"}, 2, "accepts 1 arg(s), received 2"},
		{[]string{"inspect", "s1", "--format", "xml"}, 2, `--format "xml"`},
		{[]string{"inspect", "s1", "--tokenizer", "gpt2"}, 2, `--tokenizer "gpt2"`},
		{[]string{"inspect", "s1", "--budget", "-1"}, 2, "--budget must not be negative"},
		{[]string{"inspect", "s1", "--truncate"}, 2, "--truncate needs --budget"},
		{[]string{"inspect", "s1", "--store", "mem://"}, 2, "mem://"},
	} {
		code, stdout, stderr := runCLI(t, env, "", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit %d and %q", tc.args, code, stderr, stdout, tc.code, tc.stderr)
		}
	}
	// Session IDs are per tenant: a session of another tenant is found
	// with its own tenant only, and AGENTMEM_TENANT sets --tenant.
	st := openTestStore(t, env["AGENTMEM_STORE"])
	if _, err := st.Create(context.Background(), store.CreateRequest{ID: "t9", Tenant: "acme"}); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, env, "", "inspect", "t9"); code != 1 || !strings.Contains(stderr, `session "t9" not found`) {
		t.Errorf("inspect of acme's session in the default tenant: exit %d %q", code, stderr)
	}
	env["AGENTMEM_TENANT"] = "acme"
	if code, stdout, stderr := runCLI(t, env, "", "inspect", "t9"); code != 0 || !strings.HasPrefix(stdout, "Session t9\n") || !strings.Contains(stdout, "tenant     acme") {
		t.Errorf("inspect with AGENTMEM_TENANT=acme: exit %d %q %q", code, stderr, stdout)
	}
}

func TestSessionCommandsHelp(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want []string
	}{
		{"inspect", []string{"inspect SESSION", "Examples:", "--budget", "--tenant", "--format", "--tokenizer", "--detail", "--store"}},
		{"export", []string{"export [SESSION...]", "Examples:", "--all", "--user", "--agent", "--tenant", "-o, --output", "--progress", "agentmem import"}},
		{"import", []string{"import [FILE|-]", "Examples:", "--new-ids", "--on-conflict", "--progress", "--no-progress", "--allow-short-log", "--json"}},
	} {
		code, stdout, stderr := runCLI(t, nil, "", tc.cmd, "--help")
		if code != 0 || stderr != "" {
			t.Errorf("%s --help: exit %d, %q", tc.cmd, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%s --help lacks %q:\n%s", tc.cmd, w, stdout)
			}
		}
	}
	_, stdout, _ := runCLI(t, nil, "", "--help")
	for _, c := range []string{"inspect", "export", "import"} {
		if !regexp.MustCompile(`(?m)^  ` + c + ` +\S`).MatchString(stdout) {
			t.Errorf("the root help does not list %s:\n%s", c, stdout)
		}
	}
}

// Inspecting a single_run session does not end its run (a bound memory's
// Close would delete it).
func TestInspectKeepsSingleRunSession(t *testing.T) {
	url := newStoreURL(t, "a.db")
	st := openTestStore(t, url)
	ctx := context.Background()
	if _, err := st.Create(ctx, store.CreateRequest{ID: "run", Retention: store.SingleRun}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "run", Steps: []agentmem.Step{&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "t"}, Task: "count to 3"}}}); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, nil, "", "inspect", "run", "--store", url)
	if code != 0 || !strings.Contains(stdout, "  retention  single_run\n") || !strings.Contains(stdout, "Memory: 1 steps (0 actions)") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	if _, err := st.Get(ctx, "", "run"); err != nil {
		t.Fatalf("the single_run session after inspect: %v", err)
	}
}
