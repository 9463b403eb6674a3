package storetest

import (
	"slices"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
)

// record calls sessions.Service.Record over the store's own working sets.
func (e *env) record(req sessions.RecordRequest) (*sessions.RecordResponse, error) {
	e.t.Helper()
	if req.Now == nil {
		req.Now = e.clock.Now
	}
	return e.svc().Record(e.ctx, req)
}

// heldTexts renders a working set as one line per message, "role:text", tool
// results as "tool:call=text".
func heldTexts(steps []agentmem.Step) []string {
	var out []string
	for _, s := range steps {
		for _, m := range s.Messages(agentmem.RenderOptions{}) {
			t := string(m.Role) + ":" + m.Text()
			if m.ToolCallID != "" {
				t = "tool:" + m.ToolCallID + "=" + m.Text()
			}
			out = append(out, t)
		}
	}
	return out
}

func (s *suite) recordTests() []namedTest {
	// held appends a conversation: a system prompt, a question, an action
	// with two results and an answer (seqs 1 to 5 and the amendments).
	held := func(e *env) int64 {
		e.create(store.CreateRequest{ID: "r"})
		e.appendMessages("r", agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text("sys")}, userMsg("Q1"),
			callsMsg("", "a", "b"), resultMsg("a", "ra"), resultMsg("b", "rb"), agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text("A1")})
		sess, err := e.st.Get(e.ctx, "", "r")
		if err != nil {
			e.t.Fatal(err)
		}
		return sess.LastSeq
	}
	return []namedTest{
		{"AppendOnly", func(t *testing.T) {
			e := s.open(t)
			last := held(e)
			r, err := e.record(sessions.RecordRequest{SessionID: "r", ExpectedLastSeq: last, Keep: -1,
				Messages: func(left int) []agentmem.Message {
					if left != 5 {
						t.Errorf("left %d, want the 5 conversation messages", left)
					}
					return []agentmem.Message{userMsg("Q2")}
				}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Rewound != 0 || r.Appended != 1 || len(r.Seqs) != 1 || r.CompactionSeq != 0 || r.LastSeq != last+1 {
				t.Fatalf("record: %+v", r)
			}
			want := []string{"system:sys", "user:Q1", "assistant:", "tool:a=ra", "tool:b=rb", "assistant:A1", "user:Q2"}
			if got := heldTexts(e.workingSet("r")); !slices.Equal(got, want) {
				t.Fatalf("working set %q, want %q", got, want)
			}
		}},
		{"RewindIsOneAppend", func(t *testing.T) {
			// Keeping 3 of 5 messages takes off the answer (a step) and
			// the result b (one result of the action): the action stands
			// with its call b pending, which the new messages answer again.
			e := s.open(t)
			last := held(e)
			before := len(e.entries("r"))
			sys := "sys v2"
			r, err := e.record(sessions.RecordRequest{SessionID: "r", ExpectedLastSeq: last, Keep: 3, System: &sys,
				Messages: func(left int) []agentmem.Message {
					if left != 3 {
						t.Errorf("left %d, want 3", left)
					}
					return []agentmem.Message{resultMsg("b", "rb2"), agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text("A1 again")}}
				}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Rewound != 2 || r.Appended != 2 || len(r.Seqs) != 1 || r.CompactionSeq != r.LastSeq || r.LastSeq != last+2 {
				t.Fatalf("record: %+v", r)
			}
			if got := len(e.entries("r")) - before; got != 2 {
				t.Fatalf("the record appended %d entries, want 2 (the new step and one compaction)", got)
			}
			want := []string{"system:sys v2", "user:Q1", "assistant:", "tool:a=ra", "tool:b=rb2", "assistant:A1 again"}
			if got := heldTexts(e.workingSet("r")); !slices.Equal(got, want) {
				t.Fatalf("working set %q, want %q", got, want)
			}
			// The log keeps what was taken off.
			var answers int
			for _, en := range e.entries("r") {
				if en.Kind == store.StepEntry && slices.Contains(heldTexts([]agentmem.Step{en.Step}), "assistant:A1") {
					answers++
				}
			}
			if answers != 1 {
				t.Fatalf("the log holds the first answer %d times, want 1", answers)
			}
		}},
		{"RewindWholeSteps", func(t *testing.T) {
			// Keeping 1 message takes off every result, the action and
			// the answer; a step's messages go together, so the caller
			// learns how many are left.
			e := s.open(t)
			last := held(e)
			r, err := e.record(sessions.RecordRequest{SessionID: "r", ExpectedLastSeq: last, Keep: 1,
				Messages: func(left int) []agentmem.Message {
					if left != 1 {
						t.Errorf("left %d, want 1", left)
					}
					return []agentmem.Message{userMsg("Q1 edited")}
				}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Rewound != 4 {
				t.Fatalf("rewound %d, want 4", r.Rewound)
			}
			want := []string{"system:sys", "user:Q1", "user:Q1 edited"}
			if got := heldTexts(e.workingSet("r")); !slices.Equal(got, want) {
				t.Fatalf("working set %q, want %q", got, want)
			}
		}},
		{"SystemOnly", func(t *testing.T) {
			e := s.open(t)
			last := held(e)
			sys := "new rules"
			r, err := e.record(sessions.RecordRequest{SessionID: "r", ExpectedLastSeq: last, Keep: -1, System: &sys})
			if err != nil {
				t.Fatal(err)
			}
			if r.CompactionSeq != last+1 || len(r.Seqs) != 0 {
				t.Fatalf("record: %+v", r)
			}
			if got := heldTexts(e.workingSet("r")); got[0] != "system:new rules" || len(got) != 6 {
				t.Fatalf("working set %q", got)
			}
		}},
		{"Nothing", func(t *testing.T) {
			e := s.open(t)
			last := held(e)
			r, err := e.record(sessions.RecordRequest{SessionID: "r", ExpectedLastSeq: last, Keep: -1})
			if err != nil || r.LastSeq != last {
				t.Fatalf("record of nothing: %+v, %v", r, err)
			}
			if got := len(e.entries("r")); int64(got) != last {
				t.Fatalf("the log has %d entries, want %d", got, last)
			}
		}},
		{"Conflict", func(t *testing.T) {
			e := s.open(t)
			last := held(e)
			_, err := e.record(sessions.RecordRequest{SessionID: "r", ExpectedLastSeq: last - 1, Keep: 0,
				Messages: func(int) []agentmem.Message { return []agentmem.Message{userMsg("late")} }})
			e.wantErr(err, agentmem.ErrConflict, "a record against an older working set")
			if got := len(e.entries("r")); int64(got) != last {
				t.Fatalf("a refused record changed the log: %d entries, want %d", got, last)
			}
		}},
	}
}
