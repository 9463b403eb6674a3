package proxy

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentmem/agentmem"
)

// held folds messages into the steps a session would hold.
func heldSteps(t *testing.T, msgs []agentmem.Message) []agentmem.Step {
	t.Helper()
	f, err := agentmem.FoldMessages(nil, msgs, agentmem.FoldOptions{KeepPending: true})
	if err != nil {
		t.Fatal(err)
	}
	return f.Steps
}

func sys(s string) agentmem.Message {
	return agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text(s)}
}
func user(s string) agentmem.Message {
	return agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(s)}
}
func asst(s string, calls ...agentmem.ToolCall) agentmem.Message {
	m := agentmem.Message{Role: agentmem.RoleAssistant, ToolCalls: calls}
	if s != "" {
		m.Content = agentmem.Text(s)
	}
	return m
}
func tool(id, s string) agentmem.Message {
	return agentmem.Message{Role: agentmem.RoleTool, ToolCallID: id, Content: agentmem.Text(s)}
}

// TestPlanHistory checks each rule of match.go.
func TestPlanHistory(t *testing.T) {
	call := agentmem.ToolCall{ID: "c1", Name: "f", Arguments: `{"a": 1, "b": [2]}`}
	recast := agentmem.ToolCall{ID: "c1", Name: "f", Arguments: `{"a":1,"b":[2]}`} // re-encoded by a client
	held := []agentmem.Message{sys("S"), user("T"), asst("", call), tool("c1", "r1"), asst("A1"), user("U2"), asst("A2")}
	for _, c := range []struct {
		name     string
		held     []agentmem.Message
		req      []agentmem.Message
		rule     string
		appended []agentmem.Message
		rewind   int
		system   string
	}{
		{"empty session", nil, []agentmem.Message{sys("S"), user("T")}, ruleNew, []agentmem.Message{sys("S"), user("T")}, 0, ""},
		{"whole history and more", held, append(clip(held), user("U3")), ruleContinuation, []agentmem.Message{user("U3")}, 0, ""},
		{"whole history, arguments re-encoded", held, append([]agentmem.Message{sys("S"), user("T"), asst("", recast)}, append(clip(held[3:]), user("U3"))...), ruleContinuation, []agentmem.Message{user("U3")}, 0, ""},
		{"exact retry before the reply", held, clip(held), ruleContinuation, nil, 0, ""},
		{"new messages only", held, []agentmem.Message{user("U3")}, ruleNewOnly, []agentmem.Message{user("U3")}, 0, ""},
		{"new messages with the system prompt", held, []agentmem.Message{sys("S"), user("U3")}, ruleNewOnly, []agentmem.Message{user("U3")}, 0, ""},
		{"new-only retry before the reply", append(clip(held), user("U3")), []agentmem.Message{user("U3")}, ruleOverlap, nil, 0, ""},
		{"client trimmed the front", held, []agentmem.Message{sys("S"), user("T"), asst("A1"), user("U2"), asst("A2"), user("U3")}, ruleOverlap, []agentmem.Message{user("U3")}, 0, ""},
		{"retry after the reply", held, clip(held[:6]), ruleRewind, nil, 1, ""},
		{"edited last question", held, []agentmem.Message{sys("S"), user("T"), asst("", call), tool("c1", "r1"), asst("A1"), user("U2 edited")}, ruleRewind, []agentmem.Message{user("U2 edited")}, 2, ""},
		{"new system prompt", held, append([]agentmem.Message{sys("S2")}, append(clip(held[1:]), user("U3"))...), ruleContinuation, []agentmem.Message{user("U3")}, 0, "S2"},
		{"system prompt for a session without", held[1:], append(clip(held), user("U3")), ruleContinuation, []agentmem.Message{sys("S"), user("U3")}, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := planHistory(heldSteps(t, c.held), c.req)
			if err != nil {
				t.Fatal(err)
			}
			if p.rule != c.rule || p.rewind != c.rewind {
				t.Errorf("rule %s rewind %d, want %s %d", p.rule, p.rewind, c.rule, c.rewind)
			}
			got := p.appended(p.held - p.rewind)
			if fmt.Sprint(got) != fmt.Sprint(c.appended) {
				t.Errorf("appends %v, want %v", got, c.appended)
			}
			if (p.system == nil) != (c.system == "") || (p.system != nil && *p.system != c.system) {
				t.Errorf("system %v, want %q", p.system, c.system)
			}
		})
	}
}

// TestPlanHistoryTooFarBack: a history that departs from the session's
// more than MaxRewind messages back is refused with 409.
func TestPlanHistoryTooFarBack(t *testing.T) {
	held := []agentmem.Message{user("T")}
	for i := range MaxRewind + 1 {
		held = append(held, asst(fmt.Sprint("A", i)), user(fmt.Sprint("U", i)))
	}
	req := []agentmem.Message{user("T"), asst("something else"), user("and so on")}
	_, err := planHistory(heldSteps(t, held), req)
	var e *Error
	if !errors.As(err, &e) || e.Status != 409 || e.Code != CodeHistoryDiverged {
		t.Fatalf("%v", err)
	}
	// Within MaxRewind it rewinds.
	p, err := planHistory(heldSteps(t, held[:MaxRewind]), req)
	if err != nil || p.rule != ruleRewind {
		t.Fatalf("%v %v", p, err)
	}
}

func clip(m []agentmem.Message) []agentmem.Message { return append([]agentmem.Message(nil), m...) }

// TestPlanNewOnlyFromEnds: recognising a request from the ends of the
// working set alone (as recordOnce first does, sessions.Service.History with Head and Tail)
// decides as planHistory does on the whole of it, or leaves the decision
// to it when what it needs was left out.
func TestPlanNewOnlyFromEnds(t *testing.T) {
	held := []agentmem.Message{sys("S"), user("T")}
	for i := range 12 {
		held = append(held, asst("", agentmem.ToolCall{ID: fmt.Sprint("c", i), Name: "f", Arguments: "{}"}), tool(fmt.Sprint("c", i), "r"), asst(fmt.Sprint("A", i)), user(fmt.Sprint("U", i)))
	}
	held = append(held, asst("last"))
	n := len(held)
	decided := map[string]bool{}
	for _, c := range []struct {
		name string
		req  []agentmem.Message
		want bool // decided from some ends
	}{
		{"new messages only", []agentmem.Message{user("U3")}, true},
		{"new messages with the system prompt", []agentmem.Message{sys("S"), user("new")}, true},
		{"another system prompt", []agentmem.Message{sys("S2"), user("new")}, true},
		{"new-only retry before the reply", []agentmem.Message{user("U11"), asst("last")}, true},
		{"client trimmed the front", append([]agentmem.Message{sys("S"), user("T")}, append(clip(held[n-6:]), user("more"))...), false},
		{"trimmed further", append(clip(held[n-6:]), user("more")), true},
		{"whole history", append(clip(held), user("more")), false},
		{"only the system prompt", []agentmem.Message{sys("S")}, false},
	} {
		steps := heldSteps(t, held)
		whole, err := planHistory(steps, c.req)
		if err != nil {
			t.Fatal(err)
		}
		for head := 0; head <= len(steps); head++ {
			for tail := 0; head+tail < len(steps); tail++ {
				p, ok := planNewOnly(steps[:head], steps[len(steps)-tail:], true, c.req)
				if !ok {
					continue
				}
				decided[c.name] = true
				if p.rule != whole.rule || p.from != whole.from || fmt.Sprint(p.appended(0)) != fmt.Sprint(whole.appended(0)) ||
					(p.system == nil) != (whole.system == nil) || p.system != nil && *p.system != *whole.system {
					t.Errorf("%s, head %d tail %d: %s from %d system %v, the whole working set gives %s from %d system %v",
						c.name, head, tail, p.rule, p.from, p.system, whole.rule, whole.from, whole.system)
				}
			}
		}
		if decided[c.name] != c.want {
			t.Errorf("%s: decided from the ends: %v, want %v", c.name, decided[c.name], c.want)
		}
	}
}
