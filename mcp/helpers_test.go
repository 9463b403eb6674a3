package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/mcp"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/views/recallview"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// t0 is the fixed time of the test clocks.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// env is a server over a memstore with a fixed clock, and a client
// connected to it by the SDK's in-memory transports.
type env struct {
	t      *testing.T
	st     *store.Store
	srv    *mcp.Server
	cs     *sdk.ClientSession
	logs   *syncBuffer
	tenant string
}

// newEnv starts a server for tenant over a new memstore.
func newEnv(t *testing.T, tenant string) *env {
	t.Helper()
	st := memstore.New(memstore.Options{Clock: func() time.Time { return t0 }})
	t.Cleanup(func() { st.Close() })
	return newEnvOn(t, st, tenant)
}

// newEnvOn starts a server for tenant over st.
func newEnvOn(t *testing.T, st *store.Store, tenant string) *env {
	t.Helper()
	return newEnvWith(t, mcp.Config{Store: st, Tenant: tenant})
}

// newEnvWith starts a server with cfg, its logger and clock (t0) set.
func newEnvWith(t *testing.T, cfg mcp.Config) *env {
	t.Helper()
	logs := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	cfg.Clock = func() time.Time { return t0 }
	srv, err := mcp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, st: cfg.Store, srv: srv, cs: connect(t, srv.SDK()), logs: logs, tenant: cfg.Tenant}
}

// longTerm is a deployment with long-term memory: a memstore whose log a
// recall follower indexes (every appended step), its recall index, and a
// facts memory whose clock the test moves. The servers of several
// tenants share it, as serve's do.
type longTerm struct {
	st     *store.Store
	follow *recallview.Follower
	ix     *recall.Index
	facts  *facts.Memory
	blocks *blocks.Memory
	clock  *testClock
	// extractor is extract_facts' stand-in model (cityExtractor).
	extractor *cityExtractor
}

// cityExtractor is a stand-in for the model of extract_facts: a user
// message "I live in X" adds "Lives in X.", or supersedes the known fact
// of another city; anything else teaches nothing. While down, it fails
// as facts.LLMExtractor does when the model cannot be reached.
type cityExtractor struct{ down atomic.Bool }

func (c *cityExtractor) Extract(_ context.Context, req facts.ExtractRequest) ([]facts.Decision, error) {
	if c.down.Load() {
		return nil, &facts.ExtractionError{Attempts: 1, Err: fmt.Errorf("the model is overloaded: %w", agentmem.ErrUnavailable)}
	}
	var ds []facts.Decision
	for _, m := range req.Messages {
		_, city, ok := strings.Cut(m.Text(), "I live in ")
		if m.Role != agentmem.RoleUser || !ok {
			continue
		}
		d := facts.Decision{Op: facts.OpAdd, Text: "Lives in " + strings.Trim(strings.Fields(city)[0], ".!,") + "."}
		for _, f := range req.Facts {
			if strings.HasPrefix(f.Text, "Lives in ") && f.Text != d.Text {
				d.Op, d.FactID = facts.OpSupersede, f.ID
			}
		}
		ds = append(ds, d)
	}
	return ds, nil
}

// newLongTerm makes a longTerm over in-memory backends.
func newLongTerm(t *testing.T) *longTerm {
	t.Helper()
	clock := &testClock{now: t0}
	base := memstore.New(memstore.Options{Clock: clock.Now})
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	follow, stop := recallview.Start(base, base, &recallview.Indexer{Index: ix, Store: base}, recallview.FollowerOptions{
		OnError: func(err error) { t.Errorf("indexing: %v", err) },
	})
	fm := facts.New(facts.NewMemStore(), facts.Options{Clock: clock.Now})
	bm := blocks.New(blocks.NewMemStore(), blocks.Options{Clock: clock.Now})
	t.Cleanup(func() { stop(); base.Close(); ix.Close(); fm.Store().Close(); bm.Store().Close() })
	return &longTerm{st: base, follow: follow, ix: ix, facts: fm, blocks: bm, clock: clock, extractor: &cityExtractor{}}
}

// env starts a server for tenant with every tool.
func (lt *longTerm) env(t *testing.T, tenant string) *env {
	t.Helper()
	return newEnvWith(t, mcp.Config{Store: lt.st, Tenant: tenant, Facts: lt.facts, Extractor: lt.extractor, Recall: lt.ix, RecallFollower: lt.follow, Blocks: lt.blocks})
}

// testClock is a clock the test sets.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's time.
func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// connect connects an SDK client to sv over in-memory transports.
func connect(t *testing.T, sv *sdk.Server) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := sv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// call calls a tool that must succeed and decodes its structured output
// into out (if not nil).
func call(t *testing.T, cs *sdk.ClientSession, tool string, args any, out any) {
	t.Helper()
	res := callRaw(t, cs, tool, args)
	if res.IsError {
		t.Fatalf("%s(%s) failed: %s", tool, mustJSON(t, args), text(res))
	}
	if out == nil {
		return
	}
	if err := json.Unmarshal(mustJSON(t, res.StructuredContent), out); err != nil {
		t.Fatalf("%s: decoding %s: %v", tool, mustJSON(t, res.StructuredContent), err)
	}
	// The text content carries the same JSON, for clients without
	// structured output.
	var again any
	if err := json.Unmarshal([]byte(text(res)), &again); err != nil {
		t.Fatalf("%s: the text content is not the output's JSON: %v", tool, err)
	}
}

// callErr calls a tool that must fail with a tool error (not a protocol
// error) whose message contains every one of want.
func callErr(t *testing.T, cs *sdk.ClientSession, tool string, args any, want ...string) string {
	t.Helper()
	res := callRaw(t, cs, tool, args)
	msg := text(res)
	if !res.IsError {
		t.Fatalf("%s(%s) succeeded, want an error: %s", tool, mustJSON(t, args), msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s(%s): error %q does not say %q", tool, mustJSON(t, args), msg, w)
		}
	}
	return msg
}

// callRaw calls a tool; a protocol error fails the test.
func callRaw(t *testing.T, cs *sdk.ClientSession, tool string, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	return res
}

// text joins the text contents of a result.
func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// syncBuffer is a bytes.Buffer safe for concurrent writes (the logger).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A turn with a tool call and its result, and a final answer.
var turn = []map[string]any{
	{"role": "system", "content": "You are a careful coding agent."},
	{"role": "user", "content": "What is in main.go?"},
	{"role": "assistant", "tool_calls": []map[string]any{{"id": "c1", "name": "read_file", "arguments": `{"path":"main.go"}`}}},
	{"role": "tool", "tool_call_id": "c1", "content": "package main\n\nfunc main() {}"},
	{"role": "assistant", "content": "main.go declares an empty main function."},
}

type sdkTool = sdk.Tool
