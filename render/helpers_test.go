package render_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
)

var bg = context.Background()

// show writes messages in a compact form that tests compare against:
// one line per message, "role[name]: part part ...".
func show(msgs []agentmem.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(string(m.Role))
		if m.Name != "" {
			b.WriteString("[" + m.Name + "]")
		}
		b.WriteString(":")
		for _, p := range m.Content {
			switch p.Type {
			case agentmem.PartText:
				fmt.Fprintf(&b, " text(%q)", p.Text)
			case agentmem.PartImage:
				if p.Image.URL != "" {
					fmt.Fprintf(&b, " image(%s)", p.Image.URL)
				} else {
					fmt.Fprintf(&b, " image(%d bytes)", len(p.Image.Data))
				}
			case agentmem.PartToolUse:
				fmt.Fprintf(&b, " tool_use(%s %s %s)", p.ToolCall.ID, p.ToolCall.Name, p.ToolCall.Arguments)
			case agentmem.PartToolResult:
				bang := ""
				if p.IsError {
					bang = "!"
				}
				imgs := ""
				if len(p.Images) > 0 {
					imgs = fmt.Sprintf(" +%d images", len(p.Images))
				}
				fmt.Fprintf(&b, " tool_result(%s%s %q%s)", p.ToolCallID, bang, p.Text, imgs)
			}
		}
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(&b, " call(%s %s %s)", tc.ID, tc.Name, tc.Arguments)
		}
		if m.ToolCallID != "" {
			fmt.Fprintf(&b, " answers(%s)", m.ToolCallID)
		}
		if len(m.AgentCalls) > 0 || len(m.Data) > 0 {
			b.WriteString(" +extras")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func checkShow(t *testing.T, what string, got []agentmem.Message, want string) {
	t.Helper()
	if g := show(got); g != want {
		t.Errorf("%s:\ngot:\n%swant:\n%s", what, g, want)
	}
}

// The fixture steps: one of every kind, with the details each format
// treats specially.
var (
	sysStep  = &agentmem.SystemPromptStep{Content: "You are a coder."}
	taskStep = &agentmem.TaskStep{Task: "Fix the bug.", Images: []agentmem.Image{{URL: "https://x.test/a.png"}}}
	actStep  = &agentmem.ActionStep{
		ModelOutput: "Let me look.\n",
		ToolCalls: []agentmem.ToolCall{
			{ID: "c1", Name: "read_file", Arguments: `{"path": "a.go"}`},
			{ID: "c2", Name: "run", Arguments: `{"cmd":"go test"}`},
		},
		Results: []agentmem.ToolResult{
			{CallID: "c1", Content: "package a"},
			{CallID: "c2", Content: "FAIL", IsError: true},
		},
		Observation: "stdout",
		Error:       "exit 1",
	}
	oneCallStep = &agentmem.ActionStep{
		ToolCalls: []agentmem.ToolCall{{ID: "c3", Name: "search", Arguments: `{"q":"x"}`}},
		Results:   []agentmem.ToolResult{{CallID: "c3", Content: "found"}},
	}
	textStep  = &agentmem.ActionStep{ModelOutput: "Thinking out loud."}
	planStep  = &agentmem.PlanningStep{Plan: "1. read\n2. fix"}
	noteStep  = &agentmem.ScratchpadStep{Content: "bug in a.go"}
	finalStep = &agentmem.FinalAnswerStep{Answer: "done"}
	sumStep   = &agentmem.SummaryStep{Summary: "We read files.", Covers: []agentmem.Range{{From: 2, To: 5}}}
	callStep  = &agentmem.MessageStep{Message: agentmem.Message{
		Role: agentmem.RoleAgentCall, Name: "planner", Content: agentmem.Text("check tests"),
	}}
	respStep = &agentmem.MessageStep{Message: agentmem.Message{
		Role: agentmem.RoleAgentResponse, Name: "tester", Content: agentmem.Text("all pass"),
		Data: json.RawMessage(`{"ok":true}`),
	}}
)

func stepMessages(f agentmem.Format, s agentmem.Step, summary bool) []agentmem.Message {
	return f.StepMessages(s, agentmem.RenderOptions{SummaryMode: summary})
}

func mustAdd(t testing.TB, m *agentmem.Memory, s agentmem.Step) {
	t.Helper()
	if _, err := m.Add(bg, s); err != nil {
		t.Fatalf("Add(%T): %v", s, err)
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
