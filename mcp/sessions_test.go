package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/mcp"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

func TestListToolsSchemas(t *testing.T) {
	e := newEnv(t, "")
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{ // tool: required arguments
		mcp.ToolCreateSession: nil,
		mcp.ToolListSessions:  nil,
		mcp.ToolAppend:        {"session_id", "messages"},
		mcp.ToolGetContext:    {"session_id"},
		mcp.ToolPop:           {"session_id"},
	}
	checkTools(t, res.Tools, want)
	// Enums and bounds an LLM can read.
	ctxSchema := toolSchema(t, res.Tools, mcp.ToolGetContext)
	if f := prop(ctxSchema, "format"); fmt.Sprint(f["enum"]) != "[anthropic observation openai]" || f["default"] != "openai" {
		t.Errorf("get_context format: %v", f)
	}
	if b := prop(ctxSchema, "budget"); b["minimum"] != 0.0 || b["maximum"] != float64(mcp.MaxBudget) {
		t.Errorf("get_context budget: %v", b)
	}
	msgs := prop(toolSchema(t, res.Tools, mcp.ToolAppend), "messages")
	role := msgs["items"].(map[string]any)["properties"].(map[string]any)["role"].(map[string]any)
	if msgs["type"] != "array" || msgs["minItems"] != 1.0 || fmt.Sprint(role["enum"]) != "[system user assistant tool]" {
		t.Errorf("append messages: %v", msgs)
	}
}

func toolSchema(t *testing.T, tools []*sdkTool, name string) map[string]any {
	t.Helper()
	for _, tool := range tools {
		if tool.Name == name {
			return tool.InputSchema.(map[string]any)
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

func prop(schema map[string]any, name string) map[string]any {
	return schema["properties"].(map[string]any)[name].(map[string]any)
}

func TestCreateSession(t *testing.T) {
	e := newEnv(t, "acme")
	var s mcp.SessionInfo
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "chat-1", "user_id": "alice", "agent": "coder", "metadata": map[string]string{"project": "x"}}, &s)
	if s.ID != "chat-1" || s.UserID != "alice" || s.Agent != "coder" || s.Metadata["project"] != "x" ||
		s.Retention != "session" || !s.CreatedAt.Equal(t0) || s.LastSeq != 0 || s.ExpiresAt != nil {
		t.Errorf("created %+v", s)
	}
	stored, err := e.st.Get(context.Background(), "acme", "chat-1")
	if err != nil || stored.Tenant != "acme" || stored.UserID != "alice" {
		t.Fatalf("stored %+v, %v", stored, err)
	}

	var gen mcp.SessionInfo
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"ttl_seconds": 3600}, &gen)
	if gen.ID == "" || gen.ID == "chat-1" || gen.ExpiresAt == nil || !gen.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("generated %+v", gen)
	}
	var p mcp.SessionInfo
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"retention": "persistent"}, &p)
	if p.Retention != "persistent" {
		t.Errorf("persistent: %+v", p)
	}

	callErr(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "chat-1"}, "create_session", "chat-1")
	callErr(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": ".."}, "id")
	callErr(t, e.cs, mcp.ToolCreateSession, map[string]any{"retention": "forever"}, "retention")
	callErr(t, e.cs, mcp.ToolCreateSession, map[string]any{"retention": "persistent", "ttl_seconds": 60}, "ttl_seconds", "persistent")
	callErr(t, e.cs, mcp.ToolCreateSession, map[string]any{"ttl_seconds": -1}, "ttl_seconds")
	callErr(t, e.cs, mcp.ToolCreateSession, map[string]any{"colour": "blue"}, "colour")
	callErr(t, e.cs, mcp.ToolCreateSession, map[string]any{"user_id": strings.Repeat("u", store.MaxFieldBytes+1)}, "user_id")
	if n := countSessions(t, e.st); n != 3 {
		t.Errorf("%d sessions stored; refused calls must store nothing", n)
	}
}

func countSessions(t *testing.T, st *store.Store) int {
	t.Helper()
	resp, err := st.List(context.Background(), store.ListRequest{PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.Sessions)
}

func TestListSessionsPagesAndFilters(t *testing.T) {
	e := newEnv(t, "")
	for i := range 5 {
		call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": fmt.Sprintf("a%d", i), "user_id": "alice"}, nil)
	}
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "b0", "user_id": "bob", "agent": "planner"}, nil)

	var seen []string
	token := ""
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("paging does not end")
		}
		var out mcp.ListSessionsOutput
		call(t, e.cs, mcp.ToolListSessions, map[string]any{"user_id": "alice", "page_size": 2, "page_token": token}, &out)
		if len(out.Sessions) > 2 {
			t.Fatalf("page of %d sessions, page_size 2", len(out.Sessions))
		}
		for _, s := range out.Sessions {
			if s.UserID != "alice" {
				t.Errorf("user filter let %+v through", s)
			}
			seen = append(seen, s.ID)
		}
		if token = out.NextPageToken; token == "" {
			break
		}
	}
	slices.Sort(seen)
	if !slices.Equal(seen, []string{"a0", "a1", "a2", "a3", "a4"}) {
		t.Errorf("paged through %v", seen)
	}

	var byAgent mcp.ListSessionsOutput
	call(t, e.cs, mcp.ToolListSessions, map[string]any{"agent": "planner"}, &byAgent)
	if len(byAgent.Sessions) != 1 || byAgent.Sessions[0].ID != "b0" || byAgent.NextPageToken != "" {
		t.Errorf("by agent: %+v", byAgent)
	}
	var none mcp.ListSessionsOutput
	call(t, e.cs, mcp.ToolListSessions, map[string]any{"user_id": "carol"}, &none)
	if none.Sessions == nil || len(none.Sessions) != 0 {
		t.Errorf("no sessions must be an empty list: %+v", none)
	}
	callErr(t, e.cs, mcp.ToolListSessions, map[string]any{"page_size": 0}, "page_size")
	callErr(t, e.cs, mcp.ToolListSessions, map[string]any{"page_size": mcp.MaxPageSize + 1}, "page_size")
	callErr(t, e.cs, mcp.ToolListSessions, map[string]any{"page_token": "not-a-token"}, "list_sessions")
}

func TestAppendThenGetContext(t *testing.T) {
	e := newEnv(t, "")
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "s"}, nil)
	var app mcp.AppendOutput
	call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "s", "messages": turn}, &app)
	// system, task, the action with its tool result, the final reply.
	if !slices.Equal(app.Seqs, []int64{1, 2, 3, 4}) || app.LastSeq != 4 {
		t.Fatalf("append: %+v", app)
	}

	var c mcp.ContextOutput
	call(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "s"}, &c)
	if c.Format != "openai" || c.Tokenizer != "o200k_base" || c.Budget != mcp.DefaultContextBudget || c.LastSeq != 4 || c.Note != "" ||
		!slices.Equal(c.Steps, []int{1, 2, 3, 4}) || c.DroppedSteps != 0 || len(c.Dropped) != 0 {
		t.Errorf("context: %+v", c)
	}
	var msgs []struct {
		Role      string `json:"role"`
		Content   any    `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct{ Name, Arguments string }
		} `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
	}
	remarshal(t, c.Messages, &msgs)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if !slices.Equal(roles, []string{"system", "user", "assistant", "tool", "assistant"}) {
		t.Fatalf("roles %v", roles)
	}
	if tc := msgs[2].ToolCalls; len(tc) != 1 || tc[0].ID != "c1" || tc[0].Function.Name != "read_file" || tc[0].Function.Arguments != `{"path":"main.go"}` ||
		msgs[3].ToolCallID != "c1" || msgs[3].Content != "package main\n\nfunc main() {}" || msgs[4].Content != "main.go declares an empty main function." {
		t.Errorf("messages: %+v", msgs)
	}
	if c.Tokens < 30 || c.Tokens > 120 {
		t.Errorf("tokens %d for a five-message context", c.Tokens)
	}

	// Anthropic's shape: the system prompt apart, tool use in blocks.
	var a mcp.ContextOutput
	call(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "s", "format": "anthropic", "tokenizer": "cl100k_base"}, &a)
	var body struct {
		System   any `json:"system"`
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type string `json:"type"`
			} `json:"content"`
		} `json:"messages"`
	}
	remarshal(t, a.Messages, &body)
	if a.Format != "anthropic" || a.Tokenizer != "cl100k_base" || body.System == nil || len(body.Messages) != 4 ||
		body.Messages[1].Content[0].Type != "tool_use" || body.Messages[2].Content[0].Type != "tool_result" {
		t.Errorf("anthropic context: %+v / %s", a, mustJSON(t, a.Messages))
	}
}

func TestGetContextBudget(t *testing.T) {
	e := newEnv(t, "")
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "long"}, nil)
	call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "long", "messages": turn[:2]}, nil)
	for i := range 30 {
		call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "long", "messages": []map[string]any{
			{"role": "assistant", "tool_calls": []map[string]any{{"id": fmt.Sprintf("c%d", i), "name": "search", "arguments": `{"q":"x"}`}}},
			{"role": "tool", "tool_call_id": fmt.Sprintf("c%d", i), "content": strings.Repeat(fmt.Sprintf("result %d of a long search. ", i), 20)},
		}}, nil)
	}
	var full, fit mcp.ContextOutput
	call(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "long"}, &full)
	call(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "long", "budget": 1000}, &fit)
	if full.DroppedSteps != 0 || full.Tokens <= 1000 || len(full.Steps) != 32 {
		t.Fatalf("unbudgeted: %d steps, %d tokens, %d dropped", len(full.Steps), full.Tokens, full.DroppedSteps)
	}
	if fit.Tokens > 1000 || fit.Budget != 1000 || fit.DroppedSteps == 0 || len(fit.Steps)+fit.DroppedSteps != 32 {
		t.Fatalf("budget 1000: %d steps, %d tokens, %d dropped", len(fit.Steps), fit.Tokens, fit.DroppedSteps)
	}
	// Pinned system prompt and task, then the newest steps; the dropped
	// run is the one between.
	n := len(fit.Steps)
	if fit.Steps[0] != 1 || fit.Steps[1] != 2 || fit.Steps[n-1] != 32 ||
		len(fit.Dropped) != 1 || fit.Dropped[0].First != 3 || fit.Dropped[0].Last != fit.Steps[2]-1 || fit.Dropped[0].Count != fit.DroppedSteps {
		t.Errorf("budget 1000: steps %v, dropped %+v", fit.Steps, fit.Dropped)
	}
	var trunc mcp.ContextOutput
	call(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "long", "budget": 1000, "truncate_to_fill": true}, &trunc)
	if len(trunc.Truncated) != 1 || trunc.Tokens > 1000 || trunc.Tokens < fit.Tokens {
		t.Errorf("truncate_to_fill: truncated %v, %d tokens (without: %d)", trunc.Truncated, trunc.Tokens, fit.Tokens)
	}

	callErr(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "long", "budget": 5}, "budget 5 is too small", "at least")
	callErr(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "long", "budget": -1}, "budget")
	callErr(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "long", "format": "gemini"}, "format")
	callErr(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "long", "tokenizer": "llama"}, "tokenizer")
	callErr(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "nope"}, `session "nope" does not exist`)
	callErr(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": ".."}, "session_id")
	callErr(t, e.cs, mcp.ToolGetContext, map[string]any{}, "session_id")
}

// A get_context without a budget is fitted to the default budget, at
// most the server's maximum context, not rendered whole; a larger budget
// is refused.
func TestGetContextMaxContextTokens(t *testing.T) {
	st := memstore.New(memstore.Options{Clock: func() time.Time { return t0 }})
	t.Cleanup(func() { st.Close() })
	e := newEnvWith(t, mcp.Config{Store: st, MaxContextTokens: 800})
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "long"}, nil)
	call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "long", "messages": turn[:2]}, nil)
	for i := range 20 {
		call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "long", "messages": []map[string]any{
			{"role": "user", "content": strings.Repeat(fmt.Sprintf("message %d of a long chat. ", i), 10)},
		}}, nil)
	}
	var c mcp.ContextOutput
	call(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "long"}, &c)
	if c.Tokens > 800 || c.DroppedSteps == 0 || c.Budget != 800 || c.Steps[0] != 1 || c.Steps[len(c.Steps)-1] != 22 || !strings.Contains(c.Note, "maximum context") {
		t.Fatalf("without a budget: %d tokens, %d dropped, budget %d, steps %v", c.Tokens, c.DroppedSteps, c.Budget, c.Steps)
	}
	callErr(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "long", "budget": 801}, "maximum context of 800 tokens")
}

func TestAppendErrors(t *testing.T) {
	e := newEnv(t, "")
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "s"}, nil)
	call := func(name string, args map[string]any, want ...string) {
		t.Helper()
		callErr(t, e.cs, name, args, want...)
	}
	msgs := func(m ...map[string]any) []map[string]any { return m }
	call(mcp.ToolAppend, map[string]any{"session_id": "ghost", "messages": turn}, `session "ghost" does not exist`)
	call(mcp.ToolAppend, map[string]any{"session_id": "s\n", "messages": turn}, "session_id")
	call(mcp.ToolAppend, map[string]any{"session_id": "s"}, "messages")
	call(mcp.ToolAppend, map[string]any{"session_id": "s", "messages": msgs()}, "messages")
	call(mcp.ToolAppend, map[string]any{"session_id": "s", "messages": msgs(map[string]any{"role": "wizard", "content": "x"})}, "role")
	call(mcp.ToolAppend, map[string]any{"session_id": "s", "messages": msgs(map[string]any{"role": "tool", "tool_call_id": "c9", "content": "x"})},
		"messages[0].tool_call_id", `"c9"`, "no pending tool call")
	call(mcp.ToolAppend, map[string]any{"session_id": "s", "messages": msgs(map[string]any{"role": "user", "content": "x", "is_error": true})}, "is_error")
	call(mcp.ToolAppend, map[string]any{"session_id": "s", "messages": turn, "idempotency_key": "has space"}, "idempotency_key")
	if s, _ := e.st.Get(context.Background(), "", "s"); s.LastSeq != 0 {
		t.Errorf("refused appends stored something: last_seq %d", s.LastSeq)
	}
}

func TestAppendFlushPendingAndErrorResults(t *testing.T) {
	e := newEnv(t, "")
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "s"}, nil)
	call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "s", "flush_pending": true, "messages": []map[string]any{
		{"role": "user", "content": "run both"},
		{"role": "assistant", "tool_calls": []map[string]any{{"id": "c1", "name": "f", "arguments": "{}"}, {"id": "c2", "name": "g", "arguments": "{}"}}},
		{"role": "tool", "tool_call_id": "c1", "content": "boom", "is_error": true},
	}}, nil)
	var c mcp.ContextOutput
	call(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "s", "format": "anthropic"}, &c)
	var body struct {
		Messages []struct {
			Content []struct {
				Type      string `json:"type"`
				ToolUseID string `json:"tool_use_id"`
				Content   any    `json:"content"`
				IsError   bool   `json:"is_error"`
			} `json:"content"`
		} `json:"messages"`
	}
	remarshal(t, c.Messages, &body)
	results := body.Messages[len(body.Messages)-1].Content
	if len(results) != 2 || !results[0].IsError || results[1].ToolUseID != "c2" || !strings.Contains(fmt.Sprint(results[1].Content), agentmem.MissingResult) {
		t.Errorf("results: %s", mustJSON(t, results))
	}
}

func TestAppendIdempotent(t *testing.T) {
	e := newEnv(t, "")
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "s"}, nil)
	var first, again mcp.AppendOutput
	args := map[string]any{"session_id": "s", "messages": turn, "idempotency_key": "turn-1"}
	call(t, e.cs, mcp.ToolAppend, args, &first)
	call(t, e.cs, mcp.ToolAppend, args, &again)
	if !slices.Equal(first.Seqs, again.Seqs) || again.LastSeq != 4 {
		t.Errorf("retry: first %+v, again %+v", first, again)
	}
	resp, err := e.st.Read(context.Background(), store.ReadRequest{SessionID: "s"})
	if err != nil || len(resp.Entries) != 4 || resp.Entries[0].Step.Info().ID != "turn-1/0" {
		t.Fatalf("log after a retried append: %d entries, %v", len(resp.Entries), err)
	}
	// The same key with other messages is refused, and stores nothing.
	changed := slices.Clone(turn)
	changed[1] = map[string]any{"role": "user", "content": "Delete main.go."}
	callErr(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "s", "messages": changed, "idempotency_key": "turn-1"},
		`idempotency_key "turn-1" was already used for a different append`, "another request was stored with it at seqs 1 to 4", "nothing was stored")
	longer := append(slices.Clone(turn), map[string]any{"role": "user", "content": "Thanks."})
	callErr(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "s", "messages": longer, "idempotency_key": "turn-1"},
		`idempotency_key "turn-1" was already used for a different append`)
	if s, _ := e.st.Get(context.Background(), "", "s"); s.LastSeq != 4 {
		t.Errorf("appends reusing the key stored something: last_seq %d", s.LastSeq)
	}
}

func TestTenantsAreIsolated(t *testing.T) {
	acme := newEnv(t, "acme")
	other := newEnvOn(t, acme.st, "globex")
	anon := newEnvOn(t, acme.st, "")
	call(t, acme.cs, mcp.ToolCreateSession, map[string]any{"id": "secret", "user_id": "alice"}, nil)
	call(t, acme.cs, mcp.ToolAppend, map[string]any{"session_id": "secret", "messages": turn}, nil)
	call(t, anon.cs, mcp.ToolCreateSession, map[string]any{"id": "public", "user_id": "alice"}, nil)

	for _, e := range []*env{other, anon} {
		callErr(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "secret"}, `session "secret" does not exist`)
		callErr(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "secret", "messages": turn}, `session "secret" does not exist`)
		callErr(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "secret", "messages": []map[string]any{{"role": "tool", "tool_call_id": "nobody", "content": "r"}}}, `session "secret" does not exist`)
		callErr(t, e.cs, mcp.ToolPop, map[string]any{"session_id": "secret"}, `session "secret" does not exist`)
		// IDs are per tenant: the ID is free in another tenant, and the
		// session created there is another one.
		var mine mcp.SessionInfo
		call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "secret"}, &mine)
		if mine.LastSeq != 0 {
			t.Errorf("a new session with another tenant's ID: %+v", mine)
		}
		var l mcp.ListSessionsOutput
		call(t, e.cs, mcp.ToolListSessions, map[string]any{"user_id": "alice"}, &l)
		for _, s := range l.Sessions {
			if s.ID == "secret" {
				t.Errorf("tenant %q lists acme's session", e.tenant)
			}
		}
	}
	var l mcp.ListSessionsOutput
	call(t, anon.cs, mcp.ToolListSessions, map[string]any{"page_size": 10}, &l)
	var ids []string
	for _, s := range l.Sessions {
		ids = append(ids, s.ID+"/"+s.UserID)
	}
	if slices.Sort(ids); strings.Join(ids, " ") != "public/alice secret/" {
		t.Errorf("default tenant lists %v, want its own public and secret", ids)
	}
	if s, _ := acme.st.Get(context.Background(), "acme", "secret"); s.LastSeq != 4 {
		t.Errorf("another tenant changed acme's session: last_seq %d", s.LastSeq)
	}
}

func TestStoreFailureIsAToolError(t *testing.T) {
	e := newEnv(t, "")
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "s"}, nil)
	e.st.Close()
	for tool, args := range map[string]map[string]any{
		mcp.ToolCreateSession: {},
		mcp.ToolListSessions:  {},
		mcp.ToolAppend:        {"session_id": "s", "messages": turn},
		mcp.ToolGetContext:    {"session_id": "s"},
	} {
		msg := callErr(t, e.cs, tool, args, "unavailable", "try again")
		if strings.Contains(msg, "closed") {
			t.Errorf("%s: internals leak into the tool error: %q", tool, msg)
		}
	}
	if logs := e.logs.String(); !strings.Contains(logs, "closed") || !strings.Contains(logs, "mcp tool failed") {
		t.Errorf("the failure is not logged: %s", logs)
	}
}

// brokenStore fails every call with an error that is not marked
// transient: a failure nobody expected, such as a corrupt row.
type brokenStore struct{ store.Driver }

var errBroken = errors.New("stored entry 2 does not decode")

func (brokenStore) Create(context.Context, store.CreateRequest) (*store.Session, error) {
	return nil, errBroken
}
func (brokenStore) Get(context.Context, string, string) (*store.Session, error) {
	return nil, errBroken
}
func (brokenStore) List(context.Context, store.ListRequest) (*store.ListResponse, error) {
	return nil, errBroken
}
func (brokenStore) Append(context.Context, store.AppendRequest) (*store.AppendResponse, error) {
	return nil, errBroken
}
func (brokenStore) Read(context.Context, store.ReadRequest) (*store.ReadResponse, error) {
	return nil, errBroken
}

// TestStoreBreakageIsAnInternalError: a store failure that is not
// transient is reported as an internal error that retrying will not cure
// (not as an outage to retry), without internals, and logged as an error.
func TestStoreBreakageIsAnInternalError(t *testing.T) {
	e := newEnvOn(t, store.New(brokenStore{}), "")
	for tool, args := range map[string]map[string]any{
		mcp.ToolCreateSession: {},
		mcp.ToolListSessions:  {},
		mcp.ToolAppend:        {"session_id": "s", "messages": turn},
		mcp.ToolGetContext:    {"session_id": "s"},
	} {
		msg := callErr(t, e.cs, tool, args, "internal error", "will not help")
		if strings.Contains(msg, "decode") || strings.Contains(msg, "unavailable") || strings.Contains(msg, "try again") {
			t.Errorf("%s: %q leaks internals or invites a retry", tool, msg)
		}
	}
	if logs := e.logs.String(); !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "does not decode") {
		t.Errorf("the failure is not logged as an error: %s", logs)
	}
}

// remarshal converts a decoded JSON value into out.
func remarshal(t *testing.T, v, out any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

// checkTools checks the tools a server lists: exactly those of want (tool:
// required arguments), each with a description a model can act on, a
// strict input schema whose properties are all described, and an output
// schema.
func checkTools(t *testing.T, tools []*sdkTool, want map[string][]string) {
	t.Helper()
	var got []string
	for _, tool := range tools {
		got = append(got, tool.Name)
		if len(tool.Description) < 80 {
			t.Errorf("%s: description too thin for a model to act on: %q", tool.Name, tool.Description)
		}
		schema := tool.InputSchema.(map[string]any)
		if schema["type"] != "object" || schema["additionalProperties"] != false {
			t.Errorf("%s: input schema %v", tool.Name, schema)
		}
		var required []string
		if r, ok := schema["required"].([]any); ok {
			for _, x := range r {
				required = append(required, x.(string))
			}
		}
		if !slices.Equal(required, want[tool.Name]) {
			t.Errorf("%s: required %v, want %v", tool.Name, required, want[tool.Name])
		}
		for name, p := range schema["properties"].(map[string]any) {
			if p.(map[string]any)["description"] == nil {
				t.Errorf("%s.%s has no description", tool.Name, name)
			}
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s has no output schema", tool.Name)
		}
	}
	slices.Sort(got)
	if names := slices.Sorted(maps.Keys(want)); !slices.Equal(got, names) {
		t.Errorf("tools %v, want %v", got, names)
	}
}

func TestAppendItemByItemAndPop(t *testing.T) {
	e := newEnv(t, "")
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "s"}, nil)
	one := func(m map[string]any) mcp.AppendOutput {
		t.Helper()
		var out mcp.AppendOutput
		call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "s", "messages": []map[string]any{m}}, &out)
		return out
	}
	contextNow := func() mcp.ContextOutput {
		t.Helper()
		var c mcp.ContextOutput
		call(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "s"}, &c)
		return c
	}
	one(map[string]any{"role": "user", "content": "Read both files."})
	one(map[string]any{"role": "assistant", "tool_calls": []map[string]any{{"id": "c1", "name": "read"}, {"id": "c2", "name": "read"}}})
	if c := contextNow(); fmt.Sprint(c.Pending) != "[{2 [c1 c2]}]" || strings.Contains(string(mustJSON(t, c.Messages)), `"c1"`) {
		t.Fatalf("pending calls: %+v %s", c.Pending, mustJSON(t, c.Messages))
	}
	if out := one(map[string]any{"role": "tool", "tool_call_id": "c2", "content": "two"}); !slices.Equal(out.Updated, []int64{2}) || len(out.Seqs) != 0 {
		t.Fatalf("the first result: %+v", out)
	}
	one(map[string]any{"role": "tool", "tool_call_id": "c1", "content": "one", "is_error": true})
	c := contextNow()
	var msgs []render.OpenAIMessage
	remarshal(t, c.Messages, &msgs)
	if len(c.Pending) != 0 || len(msgs) != 4 || msgs[2].ToolCallID != "c1" || msgs[3].ToolCallID != "c2" {
		t.Fatalf("after both results: %+v %s", c.Pending, mustJSON(t, c.Messages))
	}
	// A retried result is fine; another result for the call is not.
	one(map[string]any{"role": "tool", "tool_call_id": "c2", "content": "two"})
	callErr(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "s", "messages": []map[string]any{{"role": "tool", "tool_call_id": "c2", "content": "deux"}}},
		"messages[0]", `"c2"`, "already has a different result")

	// Pop: the newest tool result, whose call is then pending again.
	var p mcp.PopOutput
	call(t, e.cs, mcp.ToolPop, map[string]any{"session_id": "s"}, &p)
	if p.Seq != 2 || p.Removed || p.Message.Role != "tool" || p.Message.ToolCallID != "c2" || p.Message.Content != "two" {
		t.Fatalf("pop: %+v", p)
	}
	if c := contextNow(); fmt.Sprint(c.Pending) != "[{2 [c2]}]" {
		t.Fatalf("after the pop: %+v", c.Pending)
	}
	call(t, e.cs, mcp.ToolPop, map[string]any{"session_id": "s", "expected_last_seq": p.LastSeq}, &p)
	if p.Message.ToolCallID != "c1" || !p.Message.IsError {
		t.Fatalf("pop c1: %+v", p)
	}
	callErr(t, e.cs, mcp.ToolPop, map[string]any{"session_id": "s", "expected_last_seq": p.LastSeq - 1}, "changed", "nothing was popped")
	call(t, e.cs, mcp.ToolPop, map[string]any{"session_id": "s"}, &p)
	if !p.Removed || p.Message.Role != "assistant" || len(p.Message.ToolCalls) != 2 {
		t.Fatalf("pop the calls: %+v", p)
	}
	call(t, e.cs, mcp.ToolPop, map[string]any{"session_id": "s"}, &p)
	if p.Message.Role != "user" || p.Message.Content != "Read both files." {
		t.Fatalf("pop the task: %+v", p)
	}
	callErr(t, e.cs, mcp.ToolPop, map[string]any{"session_id": "s"}, "no messages to pop")
	callErr(t, e.cs, mcp.ToolPop, map[string]any{"session_id": "ghost"}, `session "ghost" does not exist`)
}
