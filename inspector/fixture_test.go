package inspector_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
)

// t0 is the time the fixtures start at.
var t0 = time.Date(2026, 3, 14, 9, 26, 0, 0, time.UTC)

// tickClock returns a clock that starts at start and advances a second
// on every reading, safe for concurrent use.
func tickClock(start time.Time) func() time.Time {
	var mu sync.Mutex
	now := start
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
}

// The sequence numbers of the fix-login session's log (see seedLogin).
const (
	seqSystem      = 1
	seqTask        = 2
	seqReadTest    = 3  // action read_file, summarized at 8
	seqRunTests    = 4  // action run_tests, summarized at 8
	seqGrep        = 5  // action grep, summarized at 8
	seqReadLogin   = 6  // action read_file, kept by the summary, shortened at 12
	seqSummary     = 7  // summary of 3-5
	seqCompaction1 = 8  // compaction: summary
	seqEdit        = 9  // action edit_file, its long diff shortened at 12
	seqRerun       = 10 // action run_tests
	seqNote        = 11 // scratchpad
	seqCompaction2 = 12 // compaction: PruneOldObservations shortens 6 and 9
	seqFinalCheck  = 13 // action run_tests
	seqAnswer      = 14 // final answer
)

// longTest is a test file the agent reads: long enough that small
// budgets cannot hold it.
var longTest = func() string {
	var b strings.Builder
	b.WriteString("package auth\n\nimport \"testing\"\n\n")
	for i := range 12 {
		fmt.Fprintf(&b, "func TestLoginCase%02d(t *testing.T) {\n\tu := newUser(t, \"user%02d\", \"s3cret-%02d\")\n\tif err := Login(u.Name, \"s3cret-%02d\"); err != nil {\n\t\tt.Fatalf(\"login %%s: %%v\", u.Name, err)\n\t}\n}\n\n", i, i, i, i)
	}
	return b.String()
}()

// longDiff is an edit's output, shortened later by a compaction.
var longDiff = func() string {
	var b strings.Builder
	b.WriteString("--- a/auth/login.go\n+++ b/auth/login.go\n@@ -40,12 +40,12 @@ func Login(name, password string) error {\n")
	for i := range 30 {
		fmt.Fprintf(&b, " \t// context line %02d of the login function, unchanged by the fix\n", i)
	}
	b.WriteString("-\tif bcrypt.CompareHashAndPassword([]byte(password), u.Hash) != nil {\n+\tif bcrypt.CompareHashAndPassword(u.Hash, []byte(password)) != nil {\n")
	return b.String()
}()

// seedLogin writes the fix-login session of user alice and agent coder
// through a bound memory, as an agent would: a system prompt, a task,
// actions with tool calls and observations, a summary compaction, a
// compaction that shortens an old observation, a note and a final answer.
func seedLogin(t testing.TB, st *store.Store, tenant, id string, clock func() time.Time) {
	t.Helper()
	ctx := context.Background()
	counter, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	m, err := store.CreateMemory(ctx, st, store.CreateRequest{ID: id, Tenant: tenant, UserID: "alice", Agent: "coder",
		Metadata: map[string]string{"repo": "github.com/example/shop"}},
		agentmem.Options{Counter: counter, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	add := func(s agentmem.Step) {
		t.Helper()
		if _, err := m.Add(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	action := func(thought, tool, args, result string) *agentmem.ActionStep {
		id := fmt.Sprintf("call_%s_%d", tool, m.NextNumber())
		return &agentmem.ActionStep{
			Thought:   thought,
			ToolCalls: []agentmem.ToolCall{{ID: id, Name: tool, Arguments: args}},
			Results:   []agentmem.ToolResult{{CallID: id, Content: result}},
		}
	}
	add(&agentmem.SystemPromptStep{Content: "You are a careful coding agent. Use the tools to read, search, edit and test code. Explain each change briefly."})
	add(&agentmem.TaskStep{Task: "The login test fails on main. Find out why and fix it."})
	add(action("Start with the failing test.", "read_file", `{"path":"auth/login_test.go"}`, longTest))
	add(action("Run the tests to see the failure.", "run_tests", `{"pkg":"./auth"}`,
		"--- FAIL: TestLoginCase03 (0.01s)\n    login_test.go:22: login user03: crypto/bcrypt: hashedPassword is not the hash of the given password\nFAIL\nFAIL\tgithub.com/example/shop/auth\t0.214s"))
	add(action("Where is bcrypt called?", "grep", `{"pattern":"CompareHashAndPassword","path":"auth"}`,
		"auth/login.go:47:\tif bcrypt.CompareHashAndPassword([]byte(password), u.Hash) != nil {"))
	add(action("Read the login function.", "read_file", `{"path":"auth/login.go"}`,
		"func Login(name, password string) error {\n\tu, err := users.Get(name)\n\tif err != nil {\n\t\treturn err\n\t}\n\tif bcrypt.CompareHashAndPassword([]byte(password), u.Hash) != nil {\n\t\treturn ErrBadPassword\n\t}\n\treturn nil\n}"))
	if _, err := m.SetSummary(ctx, "Read auth/login_test.go and ran the auth tests: TestLoginCase03 fails with \"hashedPassword is not the hash of the given password\". grep shows auth/login.go:47 calls bcrypt.CompareHashAndPassword with its arguments swapped.", 1); err != nil {
		t.Fatal(err)
	}
	add(action("Swap the arguments: the hash comes first.", "edit_file", `{"path":"auth/login.go","line":47}`, longDiff))
	add(action("Run the tests again.", "run_tests", `{"pkg":"./auth"}`, "ok  \tgithub.com/example/shop/auth\t0.198s"))
	add(&agentmem.ScratchpadStep{Content: "Fixed: CompareHashAndPassword(hash, password). Check the other callers before answering."})
	if _, err := m.Prune(ctx, agentmem.PruneOldObservations(1, 160)); err != nil {
		t.Fatal(err)
	}
	add(action("Run the whole suite.", "run_tests", `{"pkg":"./..."}`, "ok  \tgithub.com/example/shop/auth\t0.201s\nok  \tgithub.com/example/shop/cart\t0.087s"))
	add(&agentmem.FinalAnswerStep{Answer: "auth/login.go passed the password and the hash to bcrypt.CompareHashAndPassword in the wrong order; swapping them fixes TestLoginCase03."})
}

// The sequence numbers of the fix-login-retry branch's own steps: it
// forks fix-login after seqRerun.
const (
	seqRetryRun    = 11 // action run_tests
	seqRetryAnswer = 12 // final answer
)

// seedOthers adds sessions beside fix-login: another of alice's, one of
// bob's with another agent, alice's chat-tools (see seedToolResults), a
// branch of fix-login with steps of its own, and one of another tenant
// (acme) with a user also called alice.
func seedOthers(t testing.TB, st *store.Store, clock func() time.Time) {
	t.Helper()
	ctx := context.Background()
	opts := agentmem.Options{Counter: tokenizer.NewHeuristic(), Clock: clock}
	mk := func(req store.CreateRequest, task string) {
		t.Helper()
		m, err := store.CreateMemory(ctx, st, req, opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Add(ctx, &agentmem.TaskStep{Task: task}); err != nil {
			t.Fatal(err)
		}
	}
	mk(store.CreateRequest{ID: "plan-sprint", UserID: "alice", Agent: "planner"}, "Plan the next sprint from the open issues.")
	mk(store.CreateRequest{ID: "lit-review", UserID: "bob", Agent: "researcher"}, "Summarize recent work on retrieval-augmented agents.")
	seedToolResults(t, st, "", "chat-tools", clock)
	if _, err := st.Create(ctx, store.CreateRequest{ID: "fix-login-retry", ParentID: "fix-login", ForkSeq: seqRerun}); err != nil {
		t.Fatal(err)
	}
	b, err := store.OpenMemory(ctx, st, "fix-login-retry", opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []agentmem.Step{
		&agentmem.ActionStep{Thought: "Run the tests three times: is it flaky?",
			ToolCalls: []agentmem.ToolCall{{ID: "call_retry", Name: "run_tests", Arguments: `{"pkg":"./auth","count":3}`}},
			Results:   []agentmem.ToolResult{{CallID: "call_retry", Content: "ok  \tgithub.com/example/shop/auth\t0.588s"}}},
		&agentmem.FinalAnswerStep{Answer: "Not flaky: the swapped arguments were the whole bug."},
	} {
		if _, err := b.Add(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	mk(store.CreateRequest{ID: "acme-secret", Tenant: "acme", UserID: "alice", Agent: "coder"}, "ACME-CONFIDENTIAL: rotate the payment keys.")
}

// The sequence numbers of the chat-tools session's log (see
// seedToolResults): a chat whose tool results arrived in requests of
// their own, as agent frameworks save them, each completing its call
// with an amendment.
const (
	seqChatSystem = 1
	seqChatTask   = 2
	seqChatRead   = 3  // action read_file, pending until 4
	seqChatReadOK = 4  // amendment: read_file's result
	seqChatGrep   = 5  // action grep, pending until 6
	seqChatGrepOK = 6  // amendment: grep's result
	seqChatPrune  = 7  // compaction: shortens 3's result, carries 5's completed copy
	seqChatBoth   = 8  // action calling run_tests and lint at once
	seqChatTests  = 9  // amendment: run_tests' result
	seqChatLint   = 10 // amendment: lint's result
	seqChatAnswer = 11 // the answer: an action without calls
)

// seedToolResults writes the chat-tools session of user alice, message
// by message through sessions.Service.AppendMessages, one request each, with one
// real compaction among the amendments.
func seedToolResults(t testing.TB, st *store.Store, tenant, id string, clock func() time.Time) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.Create(ctx, store.CreateRequest{ID: id, Tenant: tenant, UserID: "alice", Agent: "chat"}); err != nil {
		t.Fatal(err)
	}
	add := func(m agentmem.Message) {
		t.Helper()
		if _, err := newStoreService(t, st).AppendMessages(ctx, sessions.MessagesRequest{Tenant: tenant, SessionID: id, Messages: []agentmem.Message{m}, Now: clock}); err != nil {
			t.Fatal(err)
		}
	}
	call := func(text string, calls ...agentmem.ToolCall) {
		add(agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text(text), ToolCalls: calls})
	}
	result := func(callID, text string) {
		add(agentmem.Message{Role: agentmem.RoleTool, ToolCallID: callID, Content: agentmem.Text(text)})
	}
	add(agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text("You are a coding assistant with tools.")})
	add(agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("Why does the cart total round wrong?")})
	call("Read the cart code.", agentmem.ToolCall{ID: "call_read", Name: "read_file", Arguments: `{"path":"cart/total.go"}`})
	result("call_read", longTest)
	call("Find the rounding.", agentmem.ToolCall{ID: "call_grep", Name: "grep", Arguments: `{"pattern":"math.Round"}`})
	result("call_grep", "cart/total.go:31:\treturn math.Round(total*100) / 100")
	m, err := store.OpenTenantMemory(ctx, st, tenant, id, agentmem.Options{Counter: tokenizer.NewHeuristic(), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Prune(ctx, agentmem.PruneOldObservations(1, 80)); err != nil {
		t.Fatal(err)
	}
	call("Run the tests and the linter.",
		agentmem.ToolCall{ID: "call_tests", Name: "run_tests", Arguments: `{"pkg":"./cart"}`},
		agentmem.ToolCall{ID: "call_lint", Name: "lint", Arguments: `{"pkg":"./cart"}`})
	result("call_tests", "--- FAIL: TestTotalRounding (0.00s)\n    total_test.go:12: got 10.01, want 10.00")
	result("call_lint", "cart/total.go:31: floating-point money")
	add(agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text("The total is rounded as a float: keep cents in integers.")})
}

// newStoreService returns a sessions service over st, without a cache.
func newStoreService(t testing.TB, st *store.Store) *sessions.Service {
	t.Helper()
	svc, err := sessions.New(sessions.Config{Store: st, CacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}
