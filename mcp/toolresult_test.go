package mcp_test

import (
	"maps"
	"testing"

	"github.com/agentmem/agentmem/mcp"
)

// TestAppendMetadataAndPop: a message's metadata is kept, a tool
// message's with its result, and pop gives it back with the message.
func TestAppendMetadataAndPop(t *testing.T) {
	e := newEnv(t, "")
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "s"}, nil)
	call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "s", "messages": []map[string]any{
		{"role": "user", "content": "Read it.", "metadata": map[string]string{"lang": "en"}},
		{"role": "assistant", "tool_calls": []map[string]any{{"id": "c1", "name": "read"}}},
		{"role": "tool", "tool_call_id": "c1", "content": "gone", "is_error": true, "metadata": map[string]string{"source": "disk"}},
	}}, nil)
	var p mcp.PopOutput
	call(t, e.cs, mcp.ToolPop, map[string]any{"session_id": "s"}, &p)
	if p.Message.ToolCallID != "c1" || !p.Message.IsError || !maps.Equal(p.Message.Metadata, map[string]string{"source": "disk", "is_error": "true"}) {
		t.Fatalf("pop the result: %+v", p)
	}
	call(t, e.cs, mcp.ToolPop, map[string]any{"session_id": "s"}, nil)
	p = mcp.PopOutput{}
	call(t, e.cs, mcp.ToolPop, map[string]any{"session_id": "s"}, &p)
	if p.Message.Role != "user" || !maps.Equal(p.Message.Metadata, map[string]string{"lang": "en"}) {
		t.Fatalf("pop the task: %+v", p)
	}
	callErr(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "s", "messages": []map[string]any{
		{"role": "user", "content": "x", "metadata": map[string]string{"": "empty key"}},
	}}, "messages[0].metadata")
}
