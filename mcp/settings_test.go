package mcp_test

import (
	"context"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/mcp"
	"github.com/agentmem/agentmem/store"
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
