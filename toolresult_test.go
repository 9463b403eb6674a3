package agentmem_test

import (
	"maps"
	"testing"

	"github.com/agentmem/agentmem"
)

// A tool message's metadata is kept with its result (ToolResult.Metadata)
// and every read of the message gives it back: Recent, MessageByID and
// PopMessage, with the is_error flag among it.
func TestToolMessageMetadataReadBack(t *testing.T) {
	m := newMem(t)
	msgs := []agentmem.Message{
		{Role: agentmem.RoleUser, Content: agentmem.Text("look it up")},
		{ID: "as", Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{call("a", "search"), call("b", "fetch")}},
		{ID: "ra", Role: agentmem.RoleTool, ToolCallID: "a", Content: agentmem.Text("found"), Metadata: map[string]string{"source": "web", "latency_ms": "12"}},
		{ID: "rb", Role: agentmem.RoleTool, ToolCallID: "b", Content: agentmem.Text("timeout"), Metadata: map[string]string{"source": "cache", agentmem.MetaIsError: "true"}},
	}
	for _, msg := range msgs {
		if err := m.AddMessage(bg, msg); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]map[string]string{
		"ra": {"source": "web", "latency_ms": "12"},
		"rb": {"source": "cache", agentmem.MetaIsError: "true"},
	}
	recent := m.Recent(2)
	if len(recent) != 2 {
		t.Fatalf("Recent(2) = %+v", recent)
	}
	for _, msg := range recent {
		if !maps.Equal(msg.Metadata, want[msg.ID]) {
			t.Errorf("Recent: message %q has metadata %v, want %v", msg.ID, msg.Metadata, want[msg.ID])
		}
	}
	for id, md := range want {
		got, err := m.MessageByID(id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Role != agentmem.RoleTool || !maps.Equal(got.Metadata, md) {
			t.Errorf("MessageByID(%q) = %+v, want metadata %v", id, got, md)
		}
	}
	a := agentmem.StepsOf[*agentmem.ActionStep](m)[0]
	popped, _ := agentmem.PopMessage(a)
	if popped.ID != "rb" || !maps.Equal(popped.Metadata, want["rb"]) {
		t.Errorf("PopMessage = %+v, want rb with %v", popped, want["rb"])
	}
	// The rendered context does not carry the metadata (a chat API has no
	// field for it), so that it costs nothing.
	c, err := m.Context(bg, agentmem.ContextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range c.Messages {
		if msg.Role == agentmem.RoleTool && msg.Metadata["source"] != "" {
			t.Errorf("the context renders a result's metadata: %+v", msg)
		}
	}
}
