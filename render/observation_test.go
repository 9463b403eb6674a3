package render_test

import (
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/tokenizer"
)

func TestObservationStepMessages(t *testing.T) {
	tests := []struct {
		name    string
		step    agentmem.Step
		summary bool
		want    string
	}{
		{"system", sysStep, false, "system: text(\"You are a coder.\")\n"},
		{"task with image", taskStep, false, "user: text(\"Fix the bug.\") image(https://x.test/a.png)\n"},
		{"action with two calls", actStep, false,
			"assistant: text(\"Let me look.\\nAction: read_file {\\\"path\\\":\\\"a.go\\\"}\\nAction: run {\\\"cmd\\\":\\\"go test\\\"}\")\n" +
				"user: text(\"Observation (read_file): package a\\n\\nError (run): FAIL\\n\\nObservation:\\nstdout\\n\\n" +
				"Error:\\nexit 1\\nNow let's retry: take care not to repeat previous errors!\")\n"},
		{"action summary mode", actStep, true,
			"assistant: text(\"Action: read_file {\\\"path\\\":\\\"a.go\\\"}\\nAction: run {\\\"cmd\\\":\\\"go test\\\"}\")\n" +
				"user: text(\"Observation (read_file): package a\\n\\nError (run): FAIL\\n\\nObservation:\\nstdout\\n\\n" +
				"Error:\\nexit 1\\nNow let's retry: take care not to repeat previous errors!\")\n"},
		{"action with one call", oneCallStep, false,
			"assistant: text(\"Action: search {\\\"q\\\":\\\"x\\\"}\")\nuser: text(\"Observation: found\")\n"},
		{"one failed call, arguments not JSON", &agentmem.ActionStep{
			ModelOutput: "try",
			ToolCalls:   []agentmem.ToolCall{{ID: "a", Name: "sh", Arguments: "ls -l"}},
			Results:     []agentmem.ToolResult{{CallID: "a", Content: "denied", IsError: true}},
		}, false, "assistant: text(\"try\\nAction: sh ls -l\")\nuser: text(\"Error: denied\")\n"},
		{"empty arguments", &agentmem.ActionStep{
			ToolCalls: []agentmem.ToolCall{{ID: "a", Name: "now"}},
			Results:   []agentmem.ToolResult{{CallID: "a", Content: "noon"}},
		}, false, "assistant: text(\"Action: now {}\")\nuser: text(\"Observation: noon\")\n"},
		{"action with only text", textStep, false, "assistant: text(\"Thinking out loud.\")\n"},
		{"planning", planStep, false, "assistant: text(\"1. read\\n2. fix\")\nuser: text(\"Now proceed and carry out this plan.\")\n"},
		{"planning summary mode", planStep, true, ""},
		{"scratchpad", noteStep, false, "assistant: text(\"bug in a.go\")\nuser: text(\"Scratchpad noted: bug in a.go\")\n"},
		{"final answer: the assistant's (a context leaves it out when it comes last)", finalStep, false, "assistant: text(\"done\")\n"},
		{"summary", sumStep, false, "user: text(\"Summary of 4 earlier steps (2–5):\\nWe read files.\")\n"},
		{"agent call", callStep, false, "user: text(\"[Request from planner]: check tests\")\n"},
		{"agent response keeps its name", respStep, false, "assistant[tester]: text(\"all pass\") text(\"{\\\"ok\\\":true}\")\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stepMessages(render.Observation, tt.step, tt.summary)
			checkShow(t, tt.name, got, tt.want)
			if err := render.Validate("observation", got); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestObservationAssembleIsIdentity(t *testing.T) {
	var msgs []agentmem.Message
	for _, s := range []agentmem.Step{sysStep, taskStep, actStep, taskStep} {
		msgs = append(msgs, stepMessages(render.Observation, s, false)...)
	}
	want := show(msgs)
	out, merged := render.Observation.Assemble(msgs, tokenizer.NewHeuristic())
	if merged != 0 || show(out) != want {
		t.Fatalf("Assemble changed the messages (%d merges):\n%s", merged, show(out))
	}
}

func TestObservationMemoryContext(t *testing.T) {
	m := agentmem.New(agentmem.Options{Format: render.Observation, Counter: tokenizer.NewHeuristic()})
	for _, s := range []agentmem.Step{sysStep, taskStep, actStep, oneCallStep, respStep} {
		mustAdd(t, m, s)
	}
	c, err := m.Context(bg, agentmem.ContextOptions{Budget: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if c.Format != "observation" {
		t.Errorf("format = %q", c.Format)
	}
	if err := render.Validate("observation", c.Messages); err != nil {
		t.Error(err)
	}
	if got := agentmem.RequestTokens(m.Counter(), c.Messages); got != c.Tokens {
		t.Errorf("tokens: reported %d, request costs %d", c.Tokens, got)
	}
}
