package render_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/tokenizer"
)

func TestAnthropicStepMessages(t *testing.T) {
	tests := []struct {
		name    string
		step    agentmem.Step
		summary bool
		want    string
	}{
		{"system", sysStep, false, "system: text(\"You are a coder.\")\n"},
		{"system summary mode", sysStep, true, ""},
		{"task with image", taskStep, false, "user: text(\"Fix the bug.\") image(https://x.test/a.png)\n"},
		{"action", actStep, false,
			"assistant: text(\"Let me look.\") tool_use(c1 read_file {\"path\": \"a.go\"}) tool_use(c2 run {\"cmd\":\"go test\"})\n" +
				"user: tool_result(c1 \"package a\") tool_result(c2! \"FAIL\") text(\"Observation:\\nstdout\") " +
				"text(\"Error:\\nexit 1\\nNow let's retry: take care not to repeat previous errors!\")\n"},
		{"action summary mode", actStep, true,
			"assistant: tool_use(c1 read_file {\"path\": \"a.go\"}) tool_use(c2 run {\"cmd\":\"go test\"})\n" +
				"user: tool_result(c1 \"package a\") tool_result(c2! \"FAIL\") text(\"Observation:\\nstdout\") " +
				"text(\"Error:\\nexit 1\\nNow let's retry: take care not to repeat previous errors!\")\n"},
		{"action with only a call", oneCallStep, false,
			"assistant: tool_use(c3 search {\"q\":\"x\"})\nuser: tool_result(c3 \"found\")\n"},
		{"action with only text", textStep, false, "assistant: text(\"Thinking out loud.\")\n"},
		{"action with only text, summary mode: the reply stays", textStep, true, "assistant: text(\"Thinking out loud.\")\n"},
		{"action with only an error", &agentmem.ActionStep{Error: "boom"}, false,
			"user: text(\"Error:\\nboom\\nNow let's retry: take care not to repeat previous errors!\")\n"},
		{"planning", planStep, false, "assistant: text(\"1. read\\n2. fix\")\nuser: text(\"Now proceed and carry out this plan.\")\n"},
		{"planning summary mode", planStep, true, ""},
		{"scratchpad", noteStep, false, "assistant: text(\"bug in a.go\")\nuser: text(\"Scratchpad noted: bug in a.go\")\n"},
		{"final answer: the assistant's (a context leaves it out when it comes last)", finalStep, false, "assistant: text(\"done\")\n"},
		{"summary", sumStep, false, "user: text(\"Summary of 4 earlier steps (2–5):\\nWe read files.\")\n"},
		{"summary in summary mode", sumStep, true, "user: text(\"Summary of 4 earlier steps (2–5):\\nWe read files.\")\n"},
		{"agent call", callStep, false, "user: text(\"[Request from planner]: check tests\")\n"},
		{"agent response: name dropped, data as text", respStep, false, "assistant: text(\"all pass\") text(\"{\\\"ok\\\":true}\")\n"},
		{"empty task gets a placeholder", &agentmem.TaskStep{Task: " "}, false, "user: text(\"(empty)\")\n"},
		{"empty system prompt renders nothing", &agentmem.SystemPromptStep{}, false, ""},
		{"agent response with agent calls", &agentmem.MessageStep{Message: agentmem.Message{
			Role: agentmem.RoleAgentResponse, AgentCalls: []agentmem.AgentCall{{Agent: "coder", Request: "write it"}},
		}}, false, "assistant: text(\"(to coder) write it\")\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkShow(t, tt.name, stepMessages(render.Anthropic, tt.step, tt.summary), tt.want)
		})
	}
}

func TestAnthropicAssembleMergesAndCounts(t *testing.T) {
	steps := []agentmem.Step{sysStep, taskStep, oneCallStep, textStep, respStep, callStep,
		&agentmem.SystemPromptStep{Content: "Be brief."}, sumStep, actStep}
	var msgs []agentmem.Message
	for _, s := range steps {
		msgs = append(msgs, stepMessages(render.Anthropic, s, false)...)
	}
	c := tokenizer.NewHeuristic()
	before := agentmem.RequestTokens(c, msgs)
	out, delta := render.Anthropic.Assemble(msgs, c)
	merged := -delta / agentmem.MessageOverhead
	want := `system: text("You are a coder.") text("Be brief.")
user: text("Fix the bug.") image(https://x.test/a.png)
assistant: tool_use(c3 search {"q":"x"})
user: tool_result(c3 "found")
assistant: text("Thinking out loud.") text("all pass") text("{\"ok\":true}")
user: text("[Request from planner]: check tests") text("Summary of 4 earlier steps (2–5):\nWe read files.")
assistant: text("Let me look.") tool_use(c1 read_file {"path": "a.go"}) tool_use(c2 run {"cmd":"go test"})
user: tool_result(c1 "package a") tool_result(c2! "FAIL") text("Observation:\nstdout") text("Error:\nexit 1\nNow let's retry: take care not to repeat previous errors!")
`
	checkShow(t, "assembled", out, want)
	// One system merge, text+response and call+summary.
	if merged != 3 {
		t.Errorf("merged = %d, want 3", merged)
	}
	if got := agentmem.RequestTokens(c, out); got != before-merged*agentmem.MessageOverhead {
		t.Errorf("assembled cost %d, want %d - %d*%d", got, before, merged, agentmem.MessageOverhead)
	}
	if err := render.Validate("anthropic", out); err != nil {
		t.Error(err)
	}
}

func TestAnthropicAssembleDoesNotTouchItsInputParts(t *testing.T) {
	a := agentmem.Message{Role: agentmem.RoleUser, Content: make(agentmem.Content, 1, 4)}
	a.Content[0] = agentmem.TextPart("a")
	b := agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("b")}
	shared := a.Content // as a step's cached rendering would be
	out, delta := render.Anthropic.Assemble([]agentmem.Message{a, b}, tokenizer.NewHeuristic())
	merged := -delta / agentmem.MessageOverhead
	if merged != 1 || len(out) != 1 || len(out[0].Content) != 2 {
		t.Fatalf("got %d merges: %s", merged, show(out))
	}
	out[0].Content[0].Text = "changed"
	if shared[0].Text != "a" || len(shared[:cap(shared)]) != 4 || shared[:2][1].Text != "" {
		t.Fatalf("Assemble wrote into its input's backing array: %+v", shared[:2])
	}
}

func TestAnthropicAssemblePutsToolResultsFirst(t *testing.T) {
	// Not produced by rendering steps, but a merged user message must still
	// begin with its tool_result blocks.
	msgs := []agentmem.Message{
		{Role: agentmem.RoleUser, Content: agentmem.Text("go")},
		{Role: agentmem.RoleAssistant, Content: agentmem.Content{{Type: agentmem.PartToolUse, ToolCall: &agentmem.ToolCall{ID: "x", Name: "f"}}}},
		{Role: agentmem.RoleUser, Content: agentmem.Text("note")},
		{Role: agentmem.RoleUser, Content: agentmem.Content{{Type: agentmem.PartToolResult, ToolCallID: "x", Text: "r"}}},
	}
	out, delta := render.Anthropic.Assemble(msgs, tokenizer.NewHeuristic())
	merged := -delta / agentmem.MessageOverhead
	checkShow(t, "assembled", out, "user: text(\"go\")\nassistant: tool_use(x f )\nuser: tool_result(x \"r\") text(\"note\")\n")
	if merged != 1 {
		t.Errorf("merged = %d", merged)
	}
	if err := render.Validate("anthropic", out); err != nil {
		t.Error(err)
	}
}

func TestAnthropicAssembleInsertsContinuing(t *testing.T) {
	// A history that opens with an assistant message: the documented case
	// where Assemble inserts a message, whose cost must be counted.
	ctx := bg
	m := agentmem.New(agentmem.Options{Format: render.Anthropic, Counter: tokenizer.NewHeuristic()})
	mustAdd(t, m, sysStep)
	if err := m.AddAssistant(ctx, agentmem.Message{Content: agentmem.Text("Hello! How can I help?")}); err != nil {
		t.Fatal(err)
	}
	if err := m.AddUser(ctx, "Fix the bug."); err != nil {
		t.Fatal(err)
	}
	c, err := m.Context(ctx, agentmem.ContextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkShow(t, "context", c.Messages, `system: text("You are a coder.")
user: text("(continuing)")
assistant: text("Hello! How can I help?")
user: text("Fix the bug.")
`)
	if err := render.Validate("anthropic", c.Messages); err != nil {
		t.Error(err)
	}
	if got := agentmem.RequestTokens(m.Counter(), c.Messages); got != c.Tokens {
		t.Errorf("request costs %d; the context reports %d", got, c.Tokens)
	}
	// At a budget of exactly that cost it still fits; one token less drops
	// the greeting rather than going over.
	exact, err := m.Context(ctx, agentmem.ContextOptions{Budget: c.Tokens})
	if err != nil || exact.Tokens != c.Tokens {
		t.Fatalf("at budget %d: %v, %v", c.Tokens, exact, err)
	}
	tight, err := m.Context(ctx, agentmem.ContextOptions{Budget: c.Tokens - 1})
	if err != nil {
		t.Fatal(err)
	}
	if tight.Tokens > c.Tokens-1 || agentmem.RequestTokens(m.Counter(), tight.Messages) != tight.Tokens {
		t.Fatalf("tight budget: reported %d, costs %d", tight.Tokens, agentmem.RequestTokens(m.Counter(), tight.Messages))
	}
}

func TestAnthropicMemoryContextFirstTaskPinned(t *testing.T) {
	m := agentmem.New(agentmem.Options{Format: render.Anthropic, Counter: tokenizer.NewHeuristic()})
	for _, s := range []agentmem.Step{sysStep, taskStep, planStep, actStep, noteStep, oneCallStep, textStep} {
		mustAdd(t, m, s)
	}
	full, err := m.Context(bg, agentmem.ContextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A budget that drops the older steps keeps the pinned task first.
	c, err := m.Context(bg, agentmem.ContextOptions{Budget: full.Tokens - 20})
	if err != nil {
		t.Fatal(err)
	}
	if c.DroppedSteps == 0 {
		t.Fatal("expected drops")
	}
	if c.Messages[1].Role != agentmem.RoleUser || c.Messages[1].Content[0].Text != "Fix the bug." {
		t.Fatalf("first message after the system prompt: %s", show(c.Messages[1:2]))
	}
	for _, ctx := range []*agentmem.Context{full, c} {
		if err := render.Validate("anthropic", ctx.Messages); err != nil {
			t.Error(err)
		}
		if got := agentmem.RequestTokens(m.Counter(), ctx.Messages); got != ctx.Tokens {
			t.Errorf("tokens: reported %d, request costs %d", ctx.Tokens, got)
		}
	}
}

func TestAnthropicStepMessagesIsDeterministic(t *testing.T) {
	a := stepMessages(render.Anthropic, actStep, false)
	b := stepMessages(render.Anthropic, actStep, false)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two renderings of one step differ")
	}
	// And the step is not changed by rendering.
	if actStep.Results[1].Content != "FAIL" || len(actStep.ToolCalls) != 2 {
		t.Fatal("rendering changed the step")
	}
}

// Some servers number tool calls afresh each turn; Anthropic refuses a
// request with two tool_use blocks of one ID, so repeats are renamed
// together with their results.
func TestAnthropicRenamesRepeatedToolIDs(t *testing.T) {
	m := agentmem.New(agentmem.Options{Format: render.Anthropic, Counter: tokenizer.NewHeuristic()})
	ctx := bg
	_ = m.AddMessage(ctx, agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text("sys")})
	_ = m.AddUser(ctx, "task")
	for range 3 {
		_ = m.AddAssistant(ctx, agentmem.Message{ToolCalls: []agentmem.ToolCall{{ID: "call_0", Name: "f", Arguments: "{}"}}})
		if err := m.AddToolResult(ctx, "call_0", "ok", false); err != nil {
			t.Fatal(err)
		}
	}
	c, err := m.Context(ctx, agentmem.ContextOptions{Budget: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if err := render.Validate("anthropic", c.Messages); err != nil {
		t.Fatal(err)
	}
	if got := agentmem.RequestTokens(m.Counter(), c.Messages); got != c.Tokens {
		t.Fatalf("reported %d, costs %d", c.Tokens, got)
	}
	var ids []string
	for _, msg := range c.Messages {
		for _, p := range msg.Content {
			if p.Type == agentmem.PartToolUse {
				ids = append(ids, p.ToolCall.ID)
			}
			if p.Type == agentmem.PartToolResult {
				ids = append(ids, "→"+p.ToolCallID)
			}
		}
	}
	if got := strings.Join(ids, " "); got != "call_0 →call_0 call_0_dup1 →call_0_dup1 call_0_dup2 →call_0_dup2" {
		t.Fatalf("ids = %s", got)
	}
	// The memory's cache is untouched: a second render is identical.
	again, _ := m.Context(ctx, agentmem.ContextOptions{Budget: 1000})
	if mustJSON(t, again.Messages) != mustJSON(t, c.Messages) {
		t.Fatal("renaming changed the cached messages")
	}
}
