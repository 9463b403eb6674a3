package mcp_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/mcp"
	"github.com/agentmem/agentmem/store"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// decode decodes a successful tool result's structured output into out
// and returns the size of its text, what a model reads.
func decode(t *testing.T, res *sdk.CallToolResult, out any) int {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
	if err := json.Unmarshal(mustJSON(t, res.StructuredContent), out); err != nil {
		t.Fatal(err)
	}
	return len(text(res))
}

// TestGetContextDefaultBudget: get_context without a budget on a long
// session returns the newest messages within mcp.DefaultContextBudget
// tokens, and a note saying that older steps were left out and how to
// see them; a larger budget shows them.
func TestGetContextDefaultBudget(t *testing.T) {
	e := newEnv(t, "")
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "long"}, nil)
	for i := range 10 {
		var msgs []map[string]any
		for j := range 30 {
			msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("message %d.%d: ", i, j) + strings.Repeat("the build failed again on the same test. ", 12)})
		}
		call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "long", "messages": msgs}, nil)
	}
	var c mcp.ContextOutput
	size := decode(t, callRaw(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "long"}), &c)
	if c.Budget != mcp.DefaultContextBudget || c.Tokens > mcp.DefaultContextBudget || c.DroppedSteps == 0 || c.Steps[len(c.Steps)-1] != 300 {
		t.Fatalf("without a budget: budget %d, %d tokens, %d dropped, steps %v", c.Budget, c.Tokens, c.DroppedSteps, c.Steps)
	}
	if size > 8*mcp.DefaultContextBudget {
		t.Errorf("without a budget: %d bytes", size)
	}
	if !strings.Contains(c.Note, fmt.Sprintf("%d older steps", c.DroppedSteps)) || !strings.Contains(c.Note, "larger budget") {
		t.Errorf("note %q", c.Note)
	}
	var all mcp.ContextOutput
	call(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "long", "budget": 200000}, &all)
	if all.DroppedSteps != 0 || len(all.Steps) != 300 || all.Note != "" {
		t.Fatalf("with a budget of 200000: %d dropped, %d steps, note %q", all.DroppedSteps, len(all.Steps), all.Note)
	}

	// Pinned messages larger than the default get what they need.
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "pinned"}, nil)
	call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "pinned", "messages": []map[string]any{
		{"role": "system", "content": strings.Repeat("Follow the style guide to the letter. ", 2000)},
		{"role": "user", "content": "Hello"},
	}}, nil)
	call(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "pinned"}, &c)
	if c.Budget <= mcp.DefaultContextBudget || c.Tokens > c.Budget || len(c.Steps) != 2 {
		t.Fatalf("pinned messages past the default: budget %d, %d tokens, steps %v", c.Budget, c.Tokens, c.Steps)
	}
}

// TestRecallFactsBounds: recall_facts returns at most mcp.MaxOutputBytes;
// the facts that do not fit come with next_offset.
func TestRecallFactsBounds(t *testing.T) {
	e := newLongTerm(t).env(t, "")
	const n = 40
	for i := range n {
		words := make([]string, 150)
		for j := range words {
			words[j] = fmt.Sprintf("w%dx%d", i, j)
		}
		call(t, e.cs, mcp.ToolRemember, map[string]any{"user_id": "alice", "text": strings.Join(words, " ")}, nil)
	}
	seen := map[string]bool{}
	offset, results := 0, 0
	for {
		var out mcp.RecallFactsOutput
		size := decode(t, callRaw(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice", "k": n - offset, "offset": offset}), &out)
		if size > mcp.MaxOutputBytes {
			t.Fatalf("a result of %d bytes", size)
		}
		results++
		for _, f := range out.Facts {
			if seen[f.ID] {
				t.Fatalf("fact %s again after offset %d", f.ID, offset)
			}
			seen[f.ID] = true
		}
		if out.NextOffset == 0 {
			break
		}
		if out.NextOffset != offset+len(out.Facts) || !strings.Contains(out.Note, fmt.Sprintf("offset %d", out.NextOffset)) {
			t.Fatalf("%d facts from %d: next_offset %d, note %q", len(out.Facts), offset, out.NextOffset, out.Note)
		}
		offset = out.NextOffset
	}
	if len(seen) != n || results < 2 {
		t.Fatalf("%d facts in %d results, want %d in more than one", len(seen), results, n)
	}
	callErr(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice", "offset": mcp.MaxOffset + 1}, "offset")
}

// TestListSessionsBounds: a page of list_sessions whose sessions would
// pass mcp.MaxOutputBytes ends early, with a next_page_token that goes on
// after the last session shown.
func TestListSessionsBounds(t *testing.T) {
	e := newEnv(t, "")
	const n = 10
	for i := range n {
		md := map[string]string{}
		for k := range store.MaxMetadataKeys {
			md[fmt.Sprintf("k%02d", k)] = strings.Repeat("v", store.MaxFieldBytes)
		}
		call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": fmt.Sprintf("s%d", i), "metadata": md}, nil)
	}
	seen := map[string]bool{}
	token, pages := "", 0
	for {
		args := map[string]any{"page_size": n}
		if token != "" {
			args["page_token"] = token
		}
		var out mcp.ListSessionsOutput
		if size := decode(t, callRaw(t, e.cs, mcp.ToolListSessions, args), &out); size > mcp.MaxOutputBytes {
			t.Fatalf("a page of %d bytes", size)
		}
		pages++
		for _, s := range out.Sessions {
			if seen[s.ID] {
				t.Fatalf("session %s again", s.ID)
			}
			seen[s.ID] = true
		}
		if token = out.NextPageToken; token == "" {
			break
		}
	}
	if len(seen) != n || pages < 2 {
		t.Fatalf("%d sessions in %d pages, want %d in more than one", len(seen), pages, n)
	}
}
