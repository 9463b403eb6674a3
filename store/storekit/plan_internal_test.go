package storekit

import (
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// TestRenumber checks that splicing a sequence number into a step's
// encoding gives exactly the encoding of the numbered step, for every
// kind, and that it applies (so appends do not silently encode twice).
func TestRenumber(t *testing.T) {
	steps := []agentmem.Step{
		&agentmem.SystemPromptStep{StepInfo: agentmem.StepInfo{ID: "sp", Number: 3}, Content: "be brief"},
		&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "t"}, Task: "do \"it\" {now}"},
		&agentmem.ActionStep{StepInfo: agentmem.StepInfo{ID: "a", Number: 7}, ToolCalls: []agentmem.ToolCall{{ID: "c", Name: "read", Arguments: `{"path":"x"}`}}, Observation: "ok"},
		&agentmem.PlanningStep{StepInfo: agentmem.StepInfo{ID: "p", Number: -1}, Plan: "1. x"},
		&agentmem.ScratchpadStep{StepInfo: agentmem.StepInfo{ID: "s", Metadata: map[string]string{"number": "1"}}, Content: "n"},
		&agentmem.FinalAnswerStep{StepInfo: agentmem.StepInfo{ID: "f", Number: 123456}, Answer: "42"},
		&agentmem.SummaryStep{StepInfo: agentmem.StepInfo{ID: "su"}, Summary: "s", Covers: []agentmem.Range{{From: 1, To: 2}}},
		&agentmem.MessageStep{StepInfo: agentmem.StepInfo{ID: "m"}, Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("hi")}},
	}
	if len(steps) != len(agentmem.Kinds()) {
		t.Fatalf("test covers %d kinds, the core has %d", len(steps), len(agentmem.Kinds()))
	}
	for _, st := range steps {
		enc, err := store.ValidateAppendEncoded(store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{st}})
		if err != nil {
			t.Fatal(err)
		}
		pre := enc[0]
		for _, seq := range []int64{1, 9, 10, 4711, 1 << 40} {
			want, err := store.EncodeStep(store.WithNumber(st, seq))
			if err != nil {
				t.Fatal(err)
			}
			got, ok := renumber(pre, st.Kind(), seq)
			if !ok {
				t.Fatalf("%s: renumber does not apply to %s", st.Kind(), pre)
			}
			if string(got) != string(want) {
				t.Fatalf("%s seq %d:\n got %s\nwant %s", st.Kind(), seq, got, want)
			}
		}
	}
	if _, ok := renumber([]byte(`{"number":1,"type":"task"}`), agentmem.KindTask, 2); ok {
		t.Fatal("renumber applied to another layout")
	}
}
