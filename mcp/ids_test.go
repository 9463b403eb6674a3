package mcp_test

import (
	"strings"
	"testing"

	"github.com/agentmem/agentmem/mcp"
)

// TestAnySessionIDs: a session ID may be any text without control
// characters (a conversation keyed by an e-mail address, by a name), and
// every tool takes it.
func TestAnySessionIDs(t *testing.T) {
	e := newEnv(t, "")
	for _, id := range []string{"user@example.com", "Research Agent", "a/b ü?#%", "../x", strings.Repeat("é", 128)} {
		var info mcp.SessionInfo
		call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": id, "user_id": id, "agent": id}, &info)
		if info.ID != id {
			t.Fatalf("create_session %q made %q", id, info.ID)
		}
		call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": id, "messages": []map[string]any{{"role": "user", "content": "hello"}}}, nil)
		var c mcp.ContextOutput
		call(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": id}, &c)
		if c.LastSeq != 1 || !strings.Contains(string(mustJSON(t, c.Messages)), "hello") {
			t.Fatalf("get_context of %q: %+v", id, c)
		}
		var list mcp.ListSessionsOutput
		call(t, e.cs, mcp.ToolListSessions, map[string]any{"user_id": id}, &list)
		if len(list.Sessions) != 1 || list.Sessions[0].ID != id {
			t.Fatalf("list_sessions of %q: %+v", id, list)
		}
		var p mcp.PopOutput
		call(t, e.cs, mcp.ToolPop, map[string]any{"session_id": id}, &p)
		if p.Message.Content != "hello" {
			t.Fatalf("pop of %q: %+v", id, p)
		}
	}
	for _, id := range []string{"..", "a\nb", strings.Repeat("é", 129)} {
		callErr(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": id, "messages": []map[string]any{{"role": "user", "content": "x"}}}, "session_id")
	}
}
