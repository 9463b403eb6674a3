package store

import (
	"bytes"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
)

// TestUnnumbered checks that the fingerprint's part of a step taken from
// its encoding is byte for byte the encoding of the step without its
// number and time, for every kind of step, and that the encodings
// EncodeStep makes always have the shape it takes apart.
func TestUnnumbered(t *testing.T) {
	kinds := func(info agentmem.StepInfo) []agentmem.Step {
		return []agentmem.Step{
			&agentmem.SystemPromptStep{StepInfo: info, Content: "be brief"},
			&agentmem.TaskStep{StepInfo: info, Task: `do "it" {now}`},
			&agentmem.ActionStep{StepInfo: info, ToolCalls: []agentmem.ToolCall{{ID: "c", Name: "read", Arguments: `{"path":"x"}`}}, Observation: "ok"},
			&agentmem.PlanningStep{StepInfo: info, Plan: "1. x"},
			&agentmem.ScratchpadStep{StepInfo: info, Content: `"time":"x"`},
			&agentmem.FinalAnswerStep{StepInfo: info, Answer: "42"},
			&agentmem.SummaryStep{StepInfo: info, Summary: "s", Covers: []agentmem.Range{{From: 1, To: 2}}},
			&agentmem.MessageStep{StepInfo: info, Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("hi"), Time: info.Time}},
		}
	}
	if n := len(kinds(agentmem.StepInfo{})); n != len(agentmem.Kinds()) {
		t.Fatalf("test covers %d kinds, the core has %d", n, len(agentmem.Kinds()))
	}
	at := time.Date(2026, 11, 28, 12, 30, 15, 0, time.UTC)
	var infos []agentmem.StepInfo
	for _, id := range []string{"", "a", `k"\<>&/0`, "é\u2028\x7f"} {
		for _, n := range []int{0, 7, -3, 1 << 40} {
			for _, tm := range []time.Time{{}, at, at.Add(123456789), at.Add(500 * time.Millisecond).In(time.FixedZone("", -(5*3600 + 30*60))), time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)} {
				for _, md := range []map[string]string{nil, {"time": "x", "id": "y"}} {
					infos = append(infos, agentmem.StepInfo{ID: id, Number: n, Time: tm, Metadata: md})
				}
			}
		}
	}
	for _, info := range infos {
		for _, s := range kinds(info) {
			enc, err := EncodeStep(s)
			if err != nil {
				t.Fatal(err)
			}
			want, err := EncodeStep(withoutNumberAndTime(s))
			if err != nil {
				t.Fatal(err)
			}
			pieces, ok := unnumbered(s, enc)
			if !ok {
				t.Fatalf("unnumbered does not apply to %s", enc)
			}
			if got := bytes.Join(pieces[:], nil); !bytes.Equal(got, want) {
				t.Fatalf("unnumbered(%s):\n got %s\nwant %s", enc, got, want)
			}
		}
	}
	// Another layout, or a time other than the step's, is not taken apart.
	task := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "t", Time: at}, Task: "x"}
	for _, enc := range []string{
		`{"number":1,"type":"task","id":"t","time":"2026-11-28T12:30:15Z","task":"x"}`,
		`{"type":"task","number":1,"id":"t","time":"2026-11-28T12:30:16Z","task":"x"}`,
		`{"type":"task","number":1,"id":"u","task":"x","time":"2026-11-28T12:30:15Z"}`,
		`{"type":"task","number":1,"id":"t","time":"2026-11-28T12:30:15.5Z","task":"x"}`,
		`{"type":"task","number":1,"task":"x"}`,
	} {
		if pieces, ok := unnumbered(task, []byte(enc)); ok {
			t.Errorf("unnumbered applied to %s: %s", enc, bytes.Join(pieces[:], nil))
		}
	}
}
