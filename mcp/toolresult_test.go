package mcp_test

import (
	"maps"
	"strings"
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

// TestAppendImagesAndPop: images of user, assistant and tool messages are
// kept (a tool's with its result), shown in get_context where the format's
// API takes them, and given back by pop.
func TestAppendImagesAndPop(t *testing.T) {
	e := newEnv(t, "")
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "s"}, nil)
	shot := "data:image/png;base64,iVBORw0KGgo="
	call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "s", "messages": []map[string]any{
		{"role": "user", "content": "What does the page show?"},
		{"role": "assistant", "content": "Looking.", "images": []map[string]any{{"url": "https://x.test/sketch.png"}}, "tool_calls": []map[string]any{{"id": "c1", "name": "screenshot"}}},
		{"role": "tool", "tool_call_id": "c1", "content": "the page", "images": []map[string]any{{"url": shot, "detail": "low"}}},
	}}, nil)
	var c mcp.ContextOutput
	call(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "s", "format": "anthropic"}, &c)
	wire := string(mustJSON(t, c.Messages))
	if !strings.Contains(wire, `"content":[{"text":"the page","type":"text"},{"source":{"data":"iVBORw0KGgo=","media_type":"image/png","type":"base64"},"type":"image"}],"is_error":false,"tool_use_id":"c1"`) ||
		!strings.Contains(wire, `"text":"Looking.\n[image: https://x.test/sketch.png]"`) {
		t.Errorf("anthropic context: %s", wire)
	}
	var p mcp.PopOutput
	call(t, e.cs, mcp.ToolPop, map[string]any{"session_id": "s"}, &p)
	if p.Message.Content != "the page" || len(p.Message.Images) != 1 || p.Message.Images[0].URL != shot || p.Message.Images[0].Detail != "low" {
		t.Fatalf("pop the result: %+v", p)
	}
	p = mcp.PopOutput{}
	call(t, e.cs, mcp.ToolPop, map[string]any{"session_id": "s"}, &p)
	if p.Message.Content != "Looking." || len(p.Message.Images) != 1 || p.Message.Images[0].URL != "https://x.test/sketch.png" {
		t.Fatalf("pop the assistant message: %+v", p)
	}
	callErr(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "s", "messages": []map[string]any{
		{"role": "system", "content": "x", "images": []map[string]any{{"url": "https://x.test/a.png"}}},
	}}, "messages[0]", "not system")
	callErr(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "s", "messages": []map[string]any{
		{"role": "user", "content": "x", "images": []map[string]any{{"url": "ftp://x.test/a.png"}}},
	}}, "images", "url")
}
