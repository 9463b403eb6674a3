package mcp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/mcp"
)

// TestMemoryBlocksTools: memory_list shows a session's blocks and its
// user's as the context does; memory_append, memory_replace and
// memory_rethink edit them, recorded as the session's agent; get_context
// shows the edit; refusals are tool errors the model can act on; another
// tenant's session is not found.
func TestMemoryBlocksTools(t *testing.T) {
	ctx := context.Background()
	lt := newLongTerm(t)
	e := lt.env(t, "acme")
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "s1", "user_id": "ann", "agent": "planner"}, nil)
	call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "s1", "messages": []map[string]any{{"role": "system", "content": "You plan trips."}, {"role": "user", "content": "hi"}}}, nil)
	set := func(o blocks.Owner, label, value string, limit int, readOnly bool) {
		t.Helper()
		if _, err := lt.blocks.Set(ctx, blocks.SetRequest{Key: blocks.Key{Tenant: "acme", Owner: o, Label: label}, Value: value, Limit: limit, ReadOnly: &readOnly}); err != nil {
			t.Fatal(err)
		}
	}
	set(blocks.User("ann"), "human", "Name: Ann.", 30, false)
	set(blocks.User("ann"), "persona", "Be kind.", 0, true)
	set(blocks.Session("s1"), "task", "Plan a trip.", 0, false)

	var list mcp.MemoryListOutput
	call(t, e.cs, mcp.ToolMemoryList, map[string]any{"session_id": "s1"}, &list)
	var labels []string
	for _, b := range list.Blocks {
		labels = append(labels, b.Owner+":"+b.Label)
	}
	if strings.Join(labels, ",") != "user:human,user:persona,session:task" || list.Blocks[0].Chars != 10 || list.Blocks[0].Limit != 30 || !list.Blocks[1].ReadOnly {
		t.Fatalf("memory_list: %+v", list)
	}

	var out mcp.BlockOutput
	call(t, e.cs, mcp.ToolMemoryAppend, map[string]any{"session_id": "s1", "label": "human", "text": "Likes trains."}, &out)
	if out.Block.Value != "Name: Ann.\nLikes trains." || out.Block.Version != 2 {
		t.Fatalf("append: %+v", out)
	}
	call(t, e.cs, mcp.ToolMemoryReplace, map[string]any{"session_id": "s1", "label": "task", "old": "a trip", "new": "a train trip"}, &out)
	if out.Block.Value != "Plan a train trip." || out.Block.Owner != "session" {
		t.Fatalf("replace: %+v", out)
	}
	call(t, e.cs, mcp.ToolMemoryRethink, map[string]any{"session_id": "s1", "label": "human", "value": "Ann; trains."}, &out)
	if b, _ := lt.blocks.Get(ctx, blocks.Key{Tenant: "acme", Owner: blocks.User("ann"), Label: "human"}); b.Value != "Ann; trains." || b.UpdatedBy != "planner" {
		t.Fatalf("rethink stored %+v", b)
	}
	var c struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	call(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "s1"}, &c)
	if !strings.Contains(c.Messages[0].Content, "You plan trips.\n\n"+blocks.Header) || !strings.Contains(c.Messages[0].Content, "<human chars=\"12/30\">\nAnn; trains.\n</human>") {
		t.Fatalf("get_context's system prompt: %q", c.Messages[0].Content)
	}

	callErr(t, e.cs, mcp.ToolMemoryAppend, map[string]any{"session_id": "s1", "label": "persona", "text": "x"}, "read-only")
	callErr(t, e.cs, mcp.ToolMemoryAppend, map[string]any{"session_id": "s1", "label": "human", "text": strings.Repeat("x", 30)}, "limit of 30")
	callErr(t, e.cs, mcp.ToolMemoryReplace, map[string]any{"session_id": "s1", "label": "human", "old": "cats", "new": "x"}, "does not occur")
	callErr(t, e.cs, mcp.ToolMemoryAppend, map[string]any{"session_id": "s1", "label": "notes", "text": "x"}, "the blocks are human, persona, task")
	// A rewrite of a label no block has starts a block of the session.
	var started mcp.BlockOutput
	call(t, e.cs, mcp.ToolMemoryRethink, map[string]any{"session_id": "s1", "label": "notes", "value": "x"}, &started)
	if started.Block.Owner != "session" || started.Block.Value != "x" || started.Block.Version != 1 {
		t.Fatalf("memory_rethink of a new label: %+v", started)
	}
	callErr(t, e.cs, mcp.ToolMemoryList, map[string]any{"session_id": "nosuch"}, "nosuch")
	other := lt.env(t, "other")
	callErr(t, other.cs, mcp.ToolMemoryList, map[string]any{"session_id": "s1"}, "s1")
}
