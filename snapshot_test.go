package agentmem_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentmem/agentmem"
)

func TestSnapshotRoundTrip(t *testing.T) {
	m := seeded(t, 3)
	mustAdd(t, m, &agentmem.PlanningStep{Plan: "1. read 2. fix"})
	mustAdd(t, m, &agentmem.FinalAnswerStep{Answer: "42"})
	_ = m.AddAssistant(bg, agentmem.Message{ToolCalls: []agentmem.ToolCall{call("p", "f")}})
	data, err := json.Marshal(m.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	snap, err := agentmem.DecodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	m2 := newMem(t)
	if err := m2.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Steps(), m2.Steps()) {
		t.Fatal("restored steps differ")
	}
	if m2.NextNumber() != m.NextNumber() || m2.Pending() == nil {
		t.Fatalf("next %d vs %d, pending %v", m2.NextNumber(), m.NextNumber(), m2.Pending())
	}
	again, _ := json.Marshal(m2.Snapshot())
	if string(again) != string(data) {
		t.Fatalf("snapshot JSON not stable:\n%s\n%s", data, again)
	}
}

func TestRestoreLegacyForms(t *testing.T) {
	plain := `[{"role":"system","content":"sys"},{"role":"user","content":"task"},
	  {"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},
	  {"role":"tool","tool_call_id":"c","content":"r"}]`
	snap, err := agentmem.DecodeSnapshot([]byte(plain))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Steps) != 3 || snap.Steps[2].Kind() != agentmem.KindAction {
		t.Fatalf("plain list -> %d steps", len(snap.Steps))
	}
	withSummary := `{"messages":[{"role":"system","content":"sys"},{"role":"user","content":"next"}],"summary":"earlier we did X"}`
	snap, err = agentmem.DecodeSnapshot([]byte(withSummary))
	if err != nil {
		t.Fatal(err)
	}
	m := newMem(t)
	if err := m.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if m.Summary() != "earlier we did X" || m.Steps()[1].Kind() != agentmem.KindSummary {
		t.Fatalf("summary not restored: %v", m.Visualize())
	}
}

func TestRestoreRefusesBadSnapshots(t *testing.T) {
	cases := map[string]string{
		"empty":          ``,
		"garbage":        `{{`,
		"future version": `{"version":9,"next_number":1,"steps":[]}`,
		"unknown field":  `{"version":1,"next_number":1,"steps":[],"extra":1}`,
		"bad step":       `{"version":1,"next_number":1,"steps":[{"type":"wizard"}]}`,
		"dup numbers":    `{"version":1,"next_number":5,"steps":[{"type":"task","number":1,"task":"a"},{"type":"task","number":1,"task":"b"}]}`,
		"number >= next": `{"version":1,"next_number":1,"steps":[{"type":"task","number":3,"task":"a"}]}`,
		"orphan result":  `[{"role":"tool","tool_call_id":"x","content":"r"}]`,
		"neither":        `{"foo":1}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			m := seeded(t, 1)
			before := m.Steps()
			snap, err := agentmem.DecodeSnapshot([]byte(in))
			if err == nil {
				err = m.Restore(snap)
			}
			if !errors.Is(err, agentmem.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if !reflect.DeepEqual(before, m.Steps()) {
				t.Fatal("a refused restore changed the memory")
			}
		})
	}
}

func TestStepJSONRoundTripEveryKind(t *testing.T) {
	steps := []agentmem.Step{
		&agentmem.SystemPromptStep{StepInfo: agentmem.StepInfo{Number: 1, ID: "a", Metadata: map[string]string{"k": "v"}}, Content: "s"},
		&agentmem.TaskStep{Task: "t", Images: []agentmem.Image{{MediaType: "image/png", Data: []byte{1, 2, 3}}}},
		&agentmem.ActionStep{Thought: "th", ModelOutput: "mo", ToolCalls: []agentmem.ToolCall{call("c", "f")}, Results: []agentmem.ToolResult{{CallID: "c", Content: "r", IsError: true}},
			Observation: "o", Code: "x=1", Error: "e", IsFinal: true, Usage: &agentmem.Usage{InputTokens: 1, OutputTokens: 2}, Duration: 5},
		&agentmem.PlanningStep{Plan: "p", ModelOutput: "m"},
		&agentmem.ScratchpadStep{Content: "c", ModelOutput: "m"},
		&agentmem.FinalAnswerStep{Answer: "a"},
		&agentmem.SummaryStep{Summary: "s", Covers: []agentmem.Range{{From: 2, To: 9}}},
		&agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleAgentCall, Name: "x", AgentCalls: []agentmem.AgentCall{{Agent: "b", Request: "r"}}, Data: json.RawMessage(`{"a":1}`)}},
	}
	if len(steps) != len(agentmem.Kinds()) {
		t.Fatalf("test covers %d kinds of %d", len(steps), len(agentmem.Kinds()))
	}
	for _, s := range steps {
		data, err := agentmem.MarshalStep(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := agentmem.UnmarshalStep(data)
		if err != nil {
			t.Fatalf("%s: %v\n%s", s.Kind(), err, data)
		}
		if !reflect.DeepEqual(s, back) {
			t.Fatalf("%s round trip:\n%#v\n%#v", s.Kind(), s, back)
		}
	}
	var list agentmem.StepList
	if err := json.Unmarshal([]byte(`[{"type":"task","task":"a"},{"type":"nope"}]`), &list); err == nil || !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("bad list: %v", err)
	}
}

func TestDecodersRefuseInvalidUTF8(t *testing.T) {
	if _, err := agentmem.UnmarshalStep([]byte("{\"type\":\"task\",\"task\":\"\xff\"}")); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("UnmarshalStep: %v", err)
	}
	if _, err := agentmem.DecodeSnapshot([]byte("[{\"role\":\"user\",\"content\":\"\xff\"}]")); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("DecodeSnapshot: %v", err)
	}
}
