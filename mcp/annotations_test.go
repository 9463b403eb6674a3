package mcp_test

import (
	"context"
	"testing"

	"github.com/agentmem/agentmem/mcp"
)

// TestToolAnnotations: every tool has a title, and its hints tell a host
// the reads from the writes and the writes that destroy something.
func TestToolAnnotations(t *testing.T) {
	e := newLongTerm(t).env(t, "acme")
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	readOnly := map[string]bool{mcp.ToolListSessions: true, mcp.ToolGetContext: true, mcp.ToolRecallFacts: true, mcp.ToolSearchMemory: true, mcp.ToolMemoryList: true}
	destructive := map[string]bool{mcp.ToolPop: true, mcp.ToolForget: true, mcp.ToolExtractFacts: true, mcp.ToolMemoryReplace: true, mcp.ToolMemoryRethink: true}
	if len(res.Tools) != 14 {
		t.Errorf("%d tools, want 14", len(res.Tools))
	}
	for _, tool := range res.Tools {
		a := tool.Annotations
		if a == nil || tool.Title == "" || a.Title != tool.Title {
			t.Errorf("%s: title %q, annotations %+v", tool.Name, tool.Title, a)
			continue
		}
		if a.ReadOnlyHint != readOnly[tool.Name] {
			t.Errorf("%s: readOnlyHint %v", tool.Name, a.ReadOnlyHint)
		}
		if !a.ReadOnlyHint && (a.DestructiveHint == nil || *a.DestructiveHint != destructive[tool.Name]) {
			t.Errorf("%s: destructiveHint %v, want %v", tool.Name, a.DestructiveHint, destructive[tool.Name])
		}
		if a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s: openWorldHint %v, want false: the tools work on agentmem's own store", tool.Name, a.OpenWorldHint)
		}
	}
}
