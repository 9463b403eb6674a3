package agentmem_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
)

func call(id, name string) agentmem.ToolCall {
	return agentmem.ToolCall{ID: id, Name: name, Arguments: `{}`}
}

func TestAddMessageFoldsIntoSteps(t *testing.T) {
	m := newMem(t)
	msgs := []agentmem.Message{
		{Role: agentmem.RoleSystem, Content: agentmem.Text("sys")},
		{Role: agentmem.RoleUser, Content: agentmem.Content{agentmem.TextPart("look"), agentmem.ImagePart(agentmem.Image{URL: "https://x/y.png"})}},
		{Role: agentmem.RoleAssistant, Content: agentmem.Text("calling two"), ToolCalls: []agentmem.ToolCall{call("a", "f"), call("b", "g")}},
		{Role: agentmem.RoleTool, ToolCallID: "b", Content: agentmem.Text("result b")},
	}
	for _, msg := range msgs {
		if err := m.AddMessage(bg, msg); err != nil {
			t.Fatal(err)
		}
	}
	if m.Len() != 3 || m.Pending() == nil {
		t.Fatalf("len %d pending %v: the action must wait, in the working set, for all its results", m.Len(), m.Pending())
	}
	c, _ := m.Context(bg, agentmem.ContextOptions{})
	for _, msg := range c.Messages {
		if len(msg.ToolCalls) > 0 || msg.Role == agentmem.RoleTool {
			t.Fatal("a pending call was rendered")
		}
	}
	if err := m.AddToolResult(bg, "a", "result a", false); err != nil {
		t.Fatal(err)
	}
	if m.Pending() != nil || m.Len() != 3 {
		t.Fatalf("action not committed: len %d", m.Len())
	}
	a := agentmem.StepsOf[*agentmem.ActionStep](m)[0]
	if a.Results[0].CallID != "a" || a.Results[1].CallID != "b" {
		t.Fatalf("results not in call order: %+v", a.Results)
	}
	task := agentmem.StepsOf[*agentmem.TaskStep](m)[0]
	if task.Task != "look" || len(task.Images) != 1 {
		t.Fatalf("task = %+v", task)
	}
	if err := m.AddAssistant(bg, agentmem.Message{Content: agentmem.Text("done")}); err != nil {
		t.Fatal(err)
	}
	recent := m.Recent(3)
	if len(recent) != 3 || recent[2].Text() != "done" || recent[0].Role != agentmem.RoleTool {
		t.Fatalf("Recent(3) = %+v", recent)
	}
}

func TestAddMessageRefusesOrphans(t *testing.T) {
	m := newMem(t)
	err := m.AddToolResult(bg, "nope", "x", false)
	if !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("orphan result: %v", err)
	}
	_ = m.AddAssistant(bg, agentmem.Message{ToolCalls: []agentmem.ToolCall{call("a", "f")}})
	if err := m.AddToolResult(bg, "other", "x", false); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("result for unknown call: %v", err)
	}
	if err := m.AddMessage(bg, agentmem.Message{Role: agentmem.RoleUser, ToolCalls: []agentmem.ToolCall{call("z", "f")}}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("user with tool calls: %v", err)
	}
	if m.Len() != 1 || m.Pending() == nil {
		t.Fatalf("refused messages changed the memory: %d steps", m.Len())
	}
}

// A tool result that arrives after other messages completes its call, as
// a store's append does, instead of being refused and lost.
func TestLateToolResultCompletesItsCall(t *testing.T) {
	m := newMem(t)
	_ = m.AddUser(bg, "task")
	_ = m.AddAssistant(bg, agentmem.Message{ToolCalls: []agentmem.ToolCall{call("a", "f")}})
	_ = m.AddUser(bg, "and also this")
	c, err := m.Context(bg, agentmem.ContextOptions{})
	if err != nil || len(c.Pending) != 1 || len(c.Messages) != 2 {
		t.Fatalf("before the result: pending %v, %d messages, %v", c.Pending, len(c.Messages), err)
	}
	if err := m.AddToolResult(bg, "a", "late result", false); err != nil {
		t.Fatalf("late result: %v", err)
	}
	a := agentmem.StepsOf[*agentmem.ActionStep](m)
	if len(a) != 1 || a[0].Pending() || a[0].Results[0].Content != "late result" {
		t.Fatalf("action = %+v", a)
	}
	c, _ = m.Context(bg, agentmem.ContextOptions{})
	roles := []agentmem.Role{}
	for _, msg := range c.Messages {
		roles = append(roles, msg.Role)
	}
	want := []agentmem.Role{agentmem.RoleUser, agentmem.RoleAssistant, agentmem.RoleTool, agentmem.RoleUser}
	if len(c.Pending) != 0 || !slices.Equal(roles, want) {
		t.Fatalf("after the result: pending %v, roles %v, want %v", c.Pending, roles, want)
	}
	if err := m.AddToolResult(bg, "a", "late result", false); err != nil {
		t.Fatalf("a repeated result: %v", err)
	}
	if err := m.AddToolResult(bg, "a", "another", false); !errors.Is(err, agentmem.ErrConflict) {
		t.Fatalf("a different result: %v", err)
	}
}

func TestFlushPendingAnswersWithErrors(t *testing.T) {
	m := newMem(t)
	_ = m.AddUser(bg, "task")
	_ = m.AddAssistant(bg, agentmem.Message{ToolCalls: []agentmem.ToolCall{call("a", "f")}})
	if err := m.FlushPending(bg); err != nil {
		t.Fatal(err)
	}
	a := agentmem.StepsOf[*agentmem.ActionStep](m)
	if len(a) != 1 || a[0].Results[0].Content != agentmem.MissingResult || !a[0].Results[0].IsError || m.Pending() != nil {
		t.Fatalf("unanswered call: %+v", a)
	}
}

func TestMessageByIDAndAgentRoles(t *testing.T) {
	m := newMem(t)
	_ = m.AddMessage(bg, agentmem.Message{ID: "u1", Role: agentmem.RoleUser, Content: agentmem.Text("hi")})
	_ = m.AddMessage(bg, agentmem.Message{ID: "ac", Role: agentmem.RoleAgentCall, Name: "planner", Content: agentmem.Text("research X")})
	_ = m.AddMessage(bg, agentmem.Message{ID: "ar", Role: agentmem.RoleAgentResponse, Content: agentmem.Text("X is Y")})
	got, err := m.MessageByID("u1")
	if err != nil || got.Text() != "hi" {
		t.Fatalf("MessageByID = %+v, %v", got, err)
	}
	if _, err := m.MessageByID("missing"); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("missing id: %v", err)
	}
	c, _ := m.Context(bg, agentmem.ContextOptions{})
	if c.Messages[1].Role != agentmem.RoleUser || !strings.HasPrefix(c.Messages[1].Text(), "[Request from planner]: research X") {
		t.Fatalf("agent call rendered as %+v", c.Messages[1])
	}
	if c.Messages[2].Role != agentmem.RoleAssistant {
		t.Fatalf("agent response rendered as %+v", c.Messages[2])
	}
}
