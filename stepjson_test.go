package agentmem_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentmem/agentmem"
)

// requiredKeys are the members every step kind's JSON must have (the
// OpenAPI document's required lists), besides "type".
var requiredKeys = map[agentmem.StepKind][]string{
	agentmem.KindSystemPrompt: {"content"},
	agentmem.KindTask:         {"task"},
	agentmem.KindAction:       nil,
	agentmem.KindPlanning:     {"plan"},
	agentmem.KindScratchpad:   {"content"},
	agentmem.KindFinalAnswer:  {"answer"},
	agentmem.KindSummary:      {"summary"},
	agentmem.KindMessage:      {"message"},
}

// TestUnmarshalStepRequired: a step without one of its required members,
// or with it null, is refused naming the member, nested ones (a tool
// result's call_id and content, a covered range's from and to) by their
// path; an empty value is not a missing one.
func TestUnmarshalStepRequired(t *testing.T) {
	for _, c := range []struct {
		json, field string // field "": accepted
	}{
		{`{"type":"system_prompt"}`, "content"},
		{`{"type":"system_prompt","content":null}`, "content"},
		{`{"type":"system_prompt","content":""}`, ""},
		{`{"type":"task","id":"t1"}`, "task"},
		{`{"type":"task","task":null}`, "task"},
		{`{"type":"task","task":""}`, ""},
		{`{"type":"planning","model_output":"x"}`, "plan"},
		{`{"type":"scratchpad"}`, "content"},
		{`{"type":"final_answer"}`, "answer"},
		{`{"type":"summary","covers":[]}`, "summary"},
		{`{"type":"summary","summary":"s","covers":[{"from":1,"to":2},{"from":3}]}`, "covers[1].to"},
		{`{"type":"summary","summary":"s","covers":[{"to":2}]}`, "covers[0].from"},
		{`{"type":"summary","summary":"s","covers":null}`, ""},
		{`{"type":"message"}`, "message"},
		{`{"type":"message","message":{"role":"user","content":"hi"}}`, ""},
		{`{"type":"action","tool_calls":[{"id":"c","function":{"name":"f"}}],"results":[{"call_id":"c"}]}`, "results[0].content"},
		{`{"type":"action","tool_calls":[{"id":"c","function":{"name":"f"}}],"results":[{"content":"r"}]}`, "results[0].call_id"},
		{`{"type":"action","tool_calls":[{"id":"c","function":{"name":"f"}}],"results":[{"call_id":"c","content":""}]}`, ""},
		{`{"type":"action","tool_calls":[{"function":{"name":"f"}}]}`, "tool_calls[0].id"},
		{`{"type":"action","tool_calls":[{"id":"c"}],"results":[{"call_id":"c","content":"r"}]}`, "tool_calls[0].function.name"},
		{`{"type":"action","tool_calls":[{"id":"c","function":{"name":"f","argumnets":"{}"}}],"results":[{"call_id":"c","content":"r"}]}`, "tool_calls"},
		{`{"type":"action","tool_calls":[{"id":"c","colour":"red","function":{"name":"f"}}],"results":[{"call_id":"c","content":"r"}]}`, "tool_calls"},
		{`{"type":"action"}`, ""},
	} {
		s, err := agentmem.UnmarshalStep([]byte(c.json))
		if c.field == "" {
			if err != nil {
				t.Errorf("%s: %v", c.json, err)
			}
			continue
		}
		var ie *agentmem.InvalidError
		if !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("%s: %v (%#v), want an invalid %s", c.json, err, s, c.field)
		}
	}
}

// TestMarshalStepHasRequired: what MarshalStep writes always has the
// required members, even when they are empty, so every stored step
// decodes again.
func TestMarshalStepHasRequired(t *testing.T) {
	steps := []agentmem.Step{
		&agentmem.SystemPromptStep{}, &agentmem.TaskStep{},
		&agentmem.ActionStep{ToolCalls: []agentmem.ToolCall{{ID: "c", Name: "f"}}, Results: []agentmem.ToolResult{{CallID: "c"}}},
		&agentmem.PlanningStep{}, &agentmem.ScratchpadStep{}, &agentmem.FinalAnswerStep{},
		&agentmem.SummaryStep{Covers: []agentmem.Range{{}}}, &agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleUser}},
	}
	for _, s := range steps {
		b, err := agentmem.MarshalStep(s)
		if err != nil {
			t.Fatal(err)
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(b, &members); err != nil {
			t.Fatal(err)
		}
		for _, k := range requiredKeys[s.Kind()] {
			if _, ok := members[k]; !ok {
				t.Errorf("%s: %s has no %q", s.Kind(), b, k)
			}
		}
		if _, err := agentmem.UnmarshalStep(b); err != nil {
			t.Errorf("%s does not decode again: %v", b, err)
		}
	}
}
