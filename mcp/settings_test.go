package mcp_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/mcp"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

// TestCreateSessionSettings: create_session takes a pinning (members left
// out are false) and an automatic compaction, stores them as they apply,
// and returns them; without them the session gets the default pinning.
// Bad ones are tool errors naming the field.
func TestCreateSessionSettings(t *testing.T) {
	e := newEnv(t, "acme")
	var got mcp.SessionInfo
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "chat",
		"pinning": map[string]any{"system_prompts": true, "summary": true}, "auto_compact": map[string]any{"max_tokens": 9000}}, &got)
	want := store.AutoCompact{MaxTokens: 9000, TargetTokens: 4500, KeepRecent: agentmem.DefaultKeepRecent, Summarizer: store.SummarizerExtractive}
	if got.Pinning == nil || *got.Pinning != agentmem.ChatPinning || got.AutoCompact == nil || *got.AutoCompact != want {
		t.Fatalf("create_session returned %+v", got)
	}
	s, err := e.st.Get(context.Background(), "acme", "chat")
	if err != nil || *s.Pinning != agentmem.ChatPinning || *s.AutoCompact != want {
		t.Fatalf("stored %+v, %v", s, err)
	}
	var run mcp.SessionInfo
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "run"}, &run)
	if run.Pinning == nil || *run.Pinning != agentmem.DefaultPinning || run.AutoCompact != nil {
		t.Fatalf("create_session without settings returned %+v", run)
	}
	callErr(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "bad", "auto_compact": map[string]any{"max_tokens": 100, "target_tokens": 100}}, "target_tokens")
	callErr(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "bad", "auto_compact": map[string]any{"max_tokens": 100, "summarizer": "llm"}}, "summarizer")
	callErr(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "bad", "pinning": map[string]any{"everything": true}}, "everything")
	if _, err := e.st.Get(context.Background(), "acme", "bad"); err == nil {
		t.Fatal("a refused create_session created the session")
	}
}

// TestCreateSessionExtractFacts: create_session takes extract_facts and
// returns it as given; opting in is a tool error naming the field on a
// service that extracts no facts, or for a session without a user.
func TestCreateSessionExtractFacts(t *testing.T) {
	st := memstore.New(memstore.Options{Clock: func() time.Time { return t0 }})
	t.Cleanup(func() { st.Close() })
	svc, err := sessions.New(sessions.Config{Store: st, Extraction: true})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, mcp.Config{Store: st, Tenant: "acme", Sessions: svc})
	for id, v := range map[string]any{"in": true, "out": false, "default": nil} {
		args := map[string]any{"id": id, "user_id": "u"}
		if v != nil {
			args["extract_facts"] = v
		}
		var got mcp.SessionInfo
		call(t, e.cs, mcp.ToolCreateSession, args, &got)
		s, err := st.Get(context.Background(), "acme", id)
		if err != nil {
			t.Fatal(err)
		}
		for what, x := range map[string]*bool{"returned": got.ExtractFacts, "stored": s.ExtractFacts} {
			if (v == nil) != (x == nil) || (x != nil && *x != v) {
				t.Errorf("%s: extract_facts %s %v, want %v", id, what, x, v)
			}
		}
	}
	callErr(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "bad", "extract_facts": true}, "extract_facts")
	off := newEnv(t, "acme")
	callErr(t, off.cs, mcp.ToolCreateSession, map[string]any{"id": "bad", "user_id": "u", "extract_facts": true}, "extract_facts")
	for _, env := range []*env{e, off} {
		if _, err := env.st.Get(context.Background(), "acme", "bad"); err == nil {
			t.Fatal("a refused create_session created the session")
		}
	}
}
