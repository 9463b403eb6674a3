package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	agentmcp "github.com/agentmem/agentmem/mcp"
	"github.com/agentmem/agentmem/proxy/proxytest"
	"github.com/agentmem/agentmem/store"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPBinary builds the real agentmem binary, starts `agentmem mcp`
// as a subprocess on the default SQLite store (in a temporary data
// directory), and drives it with the official MCP Go SDK client over
// stdio: it lists the tools and calls every one, then starts a second
// process on the same file and finds the data there.
func TestMCPBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: -short (the test builds and runs the agentmem binary)")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipping: the go tool is not on PATH, so the binary cannot be built")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "agentmem")
	if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// No --store: the default SQLite file of the data directory.
	dataHome := filepath.Join(dir, "data")
	storeURL := "sqlite://" + filepath.Join(dataHome, "agentmem", "agentmem.db")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cs, stderr := startMCP(ctx, t, bin, dataHome, "--tenant", "acme", "--log-level", "debug")
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("%s: description %q, input schema %v, output schema %v", tool.Name, tool.Description, tool.InputSchema, tool.OutputSchema)
		}
	}
	slices.Sort(names)
	want := []string{"append", "create_session", "forget", "get_context", "list_sessions", "memory_append", "memory_list", "memory_replace", "memory_rethink", "pop", "recall_facts", "remember", "search_memory"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	called := map[string]bool{}
	call := func(tool string, args map[string]any, out any) {
		t.Helper()
		called[tool] = true
		mcpCall(ctx, t, cs, tool, args, out)
	}

	var s agentmcp.SessionInfo
	call("create_session", map[string]any{"id": "proj-1", "user_id": "alice", "agent": "coder"}, &s)
	if s.ID != "proj-1" || s.UserID != "alice" {
		t.Fatalf("create_session: %+v", s)
	}
	var app agentmcp.AppendOutput
	call("append", map[string]any{"session_id": "proj-1", "messages": []map[string]any{
		{"role": "system", "content": "You are a careful coding agent."},
		{"role": "user", "content": "Why does the login test fail?"},
		{"role": "assistant", "tool_calls": []map[string]any{{"id": "c1", "name": "run_tests", "arguments": `{"pkg":"./auth"}`}}},
		{"role": "tool", "tool_call_id": "c1", "content": "FAIL: TestLogin: token expired"},
	}}, &app)
	if !slices.Equal(app.Seqs, []int64{1, 2, 3}) {
		t.Fatalf("append: %+v", app)
	}
	var list agentmcp.ListSessionsOutput
	call("list_sessions", map[string]any{"user_id": "alice"}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].ID != "proj-1" || list.Sessions[0].LastSeq != 3 {
		t.Fatalf("list_sessions: %+v", list)
	}
	var c agentmcp.ContextOutput
	call("get_context", map[string]any{"session_id": "proj-1", "budget": 8000, "format": "anthropic"}, &c)
	if wire := fmt.Sprint(c.Messages); c.Format != "anthropic" || !slices.Equal(c.Steps, []int{1, 2, 3}) || c.Tokens > 8000 ||
		!strings.Contains(wire, "token expired") || !strings.Contains(wire, "tool_use") {
		t.Fatalf("get_context: %+v", c)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_context", Arguments: map[string]any{"session_id": "proj-1", "budget": 3}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "too small") {
		t.Fatalf("a budget too small: %+v, %v", res, err)
	}

	// The agent keeps notes in a memory block of the session, which its
	// contexts show after the system prompt.
	var blk agentmcp.BlockOutput
	call("memory_rethink", map[string]any{"session_id": "proj-1", "label": "notes", "value": "The login test fails: token expired."}, &blk)
	call("memory_append", map[string]any{"session_id": "proj-1", "label": "notes", "text": "Next: check the clock."}, &blk)
	call("memory_replace", map[string]any{"session_id": "proj-1", "label": "notes", "old": "token expired", "new": "the token expired"}, &blk)
	var blks agentmcp.MemoryListOutput
	call("memory_list", map[string]any{"session_id": "proj-1"}, &blks)
	if len(blks.Blocks) != 1 || blks.Blocks[0].Label != "notes" || blks.Blocks[0].Value != "The login test fails: the token expired.\nNext: check the clock." || blks.Blocks[0].Version != 3 {
		t.Fatalf("memory_list: %+v", blks)
	}
	call("get_context", map[string]any{"session_id": "proj-1", "budget": 8000}, &c)
	if wire := fmt.Sprint(c.Messages); !strings.Contains(wire, "<notes") || !strings.Contains(wire, "check the clock") {
		t.Fatalf("the context does not show the block: %v", c.Messages)
	}

	// The turn appended above is indexed: search_memory finds it.
	var found agentmcp.SearchMemoryOutput
	call("search_memory", map[string]any{"query": "expired token", "user_id": "alice", "before": 1}, &found)
	if len(found.Hits) == 0 || found.Hits[0].SessionID != "proj-1" || found.Hits[0].Seq != 3 ||
		!strings.Contains(found.Hits[0].Text, "token expired") || len(found.Hits[0].Before) != 1 || found.Hits[0].Before[0].Seq != 2 {
		t.Fatalf("search_memory: %+v", found)
	}
	var rem agentmcp.RememberOutput
	call("remember", map[string]any{"user_id": "alice", "text": "Works on the auth service.", "session_id": "proj-1"}, &rem)
	if rem.Outcome != "added" || rem.Fact.ID == "" || rem.Fact.SessionID != "proj-1" || rem.Fact.Agent != "coder" {
		t.Fatalf("remember: %+v", rem)
	}
	var facts agentmcp.RecallFactsOutput
	call("recall_facts", map[string]any{"user_id": "alice", "query": "which service?"}, &facts)
	if len(facts.Facts) != 1 || facts.Facts[0].ID != rem.Fact.ID || facts.Facts[0].Confidence <= 0 {
		t.Fatalf("recall_facts: %+v", facts)
	}
	var forgot agentmcp.ForgetOutput
	call("forget", map[string]any{"user_id": "alice", "fact_id": rem.Fact.ID, "reason": "the user changed teams"}, &forgot)
	if forgot.FactID != rem.Fact.ID {
		t.Fatalf("forget: %+v", forgot)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "forget", Arguments: map[string]any{"user_id": "alice", "fact_id": rem.Fact.ID, "reason": "again"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "not found") {
		t.Fatalf("forgetting twice: %+v, %v", res, err)
	}
	call("remember", map[string]any{"user_id": "alice", "text": "Prefers short answers."}, &rem)
	// An item appended alone, then popped off again.
	call("append", map[string]any{"session_id": "proj-1", "messages": []map[string]any{{"role": "user", "content": "And the signup test?"}}}, &app)
	var popped agentmcp.PopOutput
	call("pop", map[string]any{"session_id": "proj-1", "expected_last_seq": app.LastSeq}, &popped)
	if popped.Seq != 4 || !popped.Removed || popped.Message.Role != "user" || popped.Message.Content != "And the signup test?" {
		t.Fatalf("pop: %+v", popped)
	}
	for _, name := range want {
		if !called[name] {
			t.Errorf("tool %s was not called", name)
		}
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if logs := stderr.String(); !strings.Contains(logs, "agentmem mcp serving on stdio") || !strings.Contains(logs, "tenant=acme") {
		t.Errorf("stderr: %s", logs)
	}

	// A second process on the same file sees what the first stored:
	// sessions, facts and the recall index.
	cs2, _ := startMCP(ctx, t, bin, dataHome, "--tenant", "acme", "--log-level", "error")
	var again agentmcp.ContextOutput
	mcpCall(ctx, t, cs2, "get_context", map[string]any{"session_id": "proj-1"}, &again)
	if again.LastSeq != 5 || len(again.Steps) != 3 { // the pop's compaction entry is 5
		t.Errorf("after a restart: %+v", again)
	}
	mcpCall(ctx, t, cs2, "recall_facts", map[string]any{"user_id": "alice"}, &facts)
	if len(facts.Facts) != 1 || facts.Facts[0].Text != "Prefers short answers." {
		t.Errorf("facts after a restart: %+v", facts)
	}
	mcpCall(ctx, t, cs2, "search_memory", map[string]any{"query": "login test"}, &found)
	if len(found.Hits) == 0 || found.Hits[0].SessionID != "proj-1" {
		t.Errorf("search after a restart: %+v", found)
	}
	cs2.Close()

	// Another tenant on the same file sees none of it.
	cs3, _ := startMCP(ctx, t, bin, dataHome, "--tenant", "globex", "--log-level", "error")
	mcpCall(ctx, t, cs3, "recall_facts", map[string]any{"user_id": "alice"}, &facts)
	mcpCall(ctx, t, cs3, "search_memory", map[string]any{"query": "login test"}, &found)
	if len(facts.Facts) != 0 || len(found.Hits) != 0 {
		t.Errorf("globex sees acme's facts %+v or turns %+v", facts, found)
	}
	cs3.Close()

	// With a model (--llm-base-url), extract_facts is offered and learns
	// from a turn.
	up := proxytest.New()
	defer up.Close()
	up.Script = extractionScript
	cs4, _ := startMCP(ctx, t, bin, dataHome, "--tenant", "acme", "--log-level", "error", "--llm-base-url", up.OpenAIBaseURL(), "--llm-model", "m")
	if tools, err := cs4.ListTools(ctx, nil); err != nil || !slices.ContainsFunc(tools.Tools, func(tl *sdk.Tool) bool { return tl.Name == agentmcp.ToolExtractFacts }) {
		t.Fatalf("with a model, the tools lack %s (%v)", agentmcp.ToolExtractFacts, err)
	}
	var ex agentmcp.ExtractFactsOutput
	mcpCall(ctx, t, cs4, agentmcp.ToolExtractFacts, map[string]any{"user_id": "dora", "messages": []map[string]any{
		{"role": "user", "content": "I live in Paris."}, {"role": "assistant", "content": "Nice."}}}, &ex)
	if len(ex.Decisions) != 1 || ex.Decisions[0].Fact == nil || ex.Decisions[0].Fact.Text != "Lives in Paris." {
		t.Errorf("extract_facts over stdio: %+v", ex)
	}
	cs4.Close()

	st, err := store.Open(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got, err := st.Get(ctx, "acme", "proj-1"); err != nil || got.Tenant != "acme" || got.Agent != "coder" {
		t.Errorf("stored session %+v, %v", got, err)
	}
}

// startMCP starts `agentmem mcp args...` with dataHome as its data
// directory (XDG_DATA_HOME, where the default store is) and none of the
// environment's AGENTMEM_* settings, and connects the SDK client to it
// over its stdin and stdout.
func startMCP(ctx context.Context, t *testing.T, bin, dataHome string, args ...string) (*sdk.ClientSession, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Env = []string{"XDG_DATA_HOME=" + dataHome}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTMEM_") && !strings.HasPrefix(kv, "XDG_DATA_HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agentmem-e2e", Version: "1"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connecting to agentmem mcp: %v\nstderr: %s", err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	return cs, stderr
}

// mcpCall calls a tool that must succeed and decodes its output into out.
func mcpCall(ctx context.Context, t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any, out any) {
	t.Helper()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error: %s", tool, res.Content[0].(*sdk.TextContent).Text)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v: %s", tool, err, b)
	}
}

// lockedBuffer collects a subprocess's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestMCPUsageErrors(t *testing.T) {
	code, _, stderr := runCLI(t, nil, "", "mcp", "--tokenizer", "llama", "--store", "mem://")
	if code != 2 || !strings.Contains(stderr, "--tokenizer") {
		t.Errorf("bad tokenizer: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI(t, nil, "", "mcp", "--store", "nosuch://x")
	if code != 1 || !strings.Contains(stderr, "nosuch") {
		t.Errorf("bad store: exit %d: %s", code, stderr)
	}
	code, stdout, _ := runCLI(t, nil, "", "mcp", "--help")
	if code != 0 || !strings.Contains(stdout, "docs/mcp.md") || !strings.Contains(stdout, "--tenant") {
		t.Errorf("help: exit %d: %s", code, stdout)
	}
}

// In process: an empty stdin is a client that left at once; stdout gets
// nothing but protocol (here: nothing), the logs go to stderr.
func TestMCPInProcessStdio(t *testing.T) {
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}` + "\n"
	code, stdout, stderr := runCLI(t, map[string]string{"AGENTMEM_STORE": "mem://"}, initialize, "mcp")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for line := range strings.Lines(stdout) {
		var msg struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil || msg.JSONRPC != "2.0" {
			t.Errorf("stdout has a line that is not JSON-RPC: %q", line)
		}
	}
	if !strings.Contains(stderr, "agentmem mcp serving on stdio") {
		t.Errorf("stderr: %s", stderr)
	}
}
