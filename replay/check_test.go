package replay

import (
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/tokenizer"
)

// The checks must find what they look for: each case breaks one guarantee
// in a hand-made context and expects exactly that kind to be counted.

func msg(role agentmem.Role, text string) agentmem.Message {
	return agentmem.Message{Role: role, Content: agentmem.Text(text)}
}

func callMsg(ids ...string) agentmem.Message {
	m := msg(agentmem.RoleAssistant, "calling")
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, agentmem.ToolCall{ID: id, Name: "f", Arguments: "{}"})
	}
	return m
}

func resultMsg(id string) agentmem.Message {
	return agentmem.Message{Role: agentmem.RoleTool, ToolCallID: id, Content: agentmem.Text("ok")}
}

func newTestChecker(format string, budget int) *checker {
	ch := newChecker(format, budget, tokenizer.NewHeuristic())
	ch.systemText, ch.taskText, ch.hasTask = "sys", "task", true
	ch.pinned[0], ch.pinned[1] = true, true
	return ch
}

// context builds a context whose Tokens is the true cost.
func testContext(steps []int, msgs ...agentmem.Message) *agentmem.Context {
	return &agentmem.Context{Messages: msgs, Steps: steps, Tokens: agentmem.RequestTokens(tokenizer.NewHeuristic(), msgs)}
}

func TestCheckerFindsEachKind(t *testing.T) {
	sys, task := msg(agentmem.RoleSystem, "sys"), msg(agentmem.RoleUser, "task")
	good := []agentmem.Message{sys, task, callMsg("a"), resultMsg("a")}
	for _, tc := range []struct {
		name   string
		format string
		budget int
		ctx    *agentmem.Context
		newest int
		want   string // the one kind expected, "" for none
	}{
		{"valid", "openai", 1000, testContext([]int{0, 1, 2}, good...), 2, ""},
		{"over budget", "openai", 10, testContext([]int{0, 1, 2}, good...), 2, "over_budget"},
		{"tokens mismatch", "openai", 1000, func() *agentmem.Context { c := testContext([]int{0, 1, 2}, good...); c.Tokens--; return c }(), 2, "tokens_mismatch"},
		{"system missing", "openai", 1000, testContext([]int{1, 2}, task, callMsg("a"), resultMsg("a")), 2, "system_missing"},
		{"other system prompt", "openai", 1000, testContext([]int{0, 1, 2}, msg(agentmem.RoleSystem, "other"), task, callMsg("a"), resultMsg("a")), 2, "system_missing"},
		{"task missing", "openai", 1000, testContext([]int{0, 2}, sys, msg(agentmem.RoleUser, "not the task"), callMsg("a"), resultMsg("a")), 2, "task_missing"},
		{"orphan tool result", "openai", 1000, testContext([]int{0, 1, 3}, sys, task, resultMsg("a")), 3, "orphan_tool_result"},
		{"call without result", "openai", 1000, testContext([]int{0, 1, 2}, sys, task, callMsg("a", "b"), resultMsg("a"), msg(agentmem.RoleUser, "next")), 2, "call_without_result"},
		{"call without result at the end", "openai", 1000, testContext([]int{0, 1, 2}, sys, task, callMsg("a")), 2, "call_without_result"},
		{"anthropic orphan part", "anthropic", 1000, testContext([]int{0, 1, 2}, sys, task, msg(agentmem.RoleAssistant, "x"),
			agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Content{{Type: agentmem.PartToolResult, ToolCallID: "z", Text: "r"}}}), 2, "orphan_tool_result"},
		{"anthropic alternation", "anthropic", 1000, testContext([]int{0, 1, 2}, sys, task, msg(agentmem.RoleUser, "again")), 2, "api_rule"},
		{"observation tool role", "observation", 1000, testContext([]int{0, 1}, sys, task, agentmem.Message{Role: agentmem.RoleTool, ToolCallID: "", Content: agentmem.Text("x")}), 1, "orphan_tool_result"},
		{"observation tool calls", "observation", 1000, testContext([]int{0, 1, 2}, sys, task, callMsg("a"), msg(agentmem.RoleUser, "Observation: ok")), 2, "call_without_result"},
		{"gap", "openai", 1000, testContext([]int{0, 1, 5, 7}, sys, task), 7, "window_gap"},
		{"window not at the end", "openai", 1000, testContext([]int{0, 1, 5, 6}, sys, task), 7, "window_gap"},
		{"window out of order", "openai", 1000, testContext([]int{0, 1, 7, 6}, sys, task), 7, "window_gap"},
		{"empty window", "openai", 1000, testContext([]int{0, 1}, sys, task), 7, ""},
		{"window over a pinned step", "openai", 1000, testContext([]int{0, 1, 2, 4}, sys, task), 4, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := newTestChecker(tc.format, tc.budget)
			if tc.name == "window over a pinned step" {
				ch.pinned[3] = true
			}
			ch.check(tc.ctx, tc.newest, 1, 3)
			counts := map[string]int{
				"over_budget": ch.v.OverBudget, "tokens_mismatch": ch.v.TokensMismatch,
				"system_missing": ch.v.SystemMissing, "task_missing": ch.v.TaskMissing,
				"orphan_tool_result": ch.v.OrphanToolResult, "call_without_result": ch.v.CallWithoutResult,
				"api_rule": ch.v.APIRule, "window_gap": ch.v.WindowGap,
			}
			for kind, n := range counts {
				want := 0
				if kind == tc.want {
					want = 1
				}
				if n != want {
					t.Errorf("%s = %d, want %d (first: %+v)", kind, n, want, ch.first)
				}
			}
			if tc.want == "" {
				if ch.v.Total != 0 {
					t.Errorf("total = %d", ch.v.Total)
				}
				return
			}
			if ch.v.Total != 1 || len(ch.first) != 1 || ch.first[0].Kind != tc.want || ch.first[0].Render != 1 || ch.first[0].Line != 3 || ch.first[0].Detail == "" {
				t.Errorf("total %d, first %+v", ch.v.Total, ch.first)
			}
		})
	}
}

func TestCheckerCountsEveryRenderAndRemembersTheFirst(t *testing.T) {
	ch := newTestChecker("openai", 5)
	c := testContext([]int{0, 1}, msg(agentmem.RoleSystem, "sys"), msg(agentmem.RoleUser, "task"))
	for i := 1; i <= 3; i++ {
		ch.check(c, 1, i, i+2)
	}
	if ch.v.OverBudget != 3 || ch.v.Total != 3 || len(ch.first) != 1 || ch.first[0].Render != 1 {
		t.Fatalf("violations %+v, first %+v", ch.v, ch.first)
	}
	if !strings.Contains(ch.first[0].Detail, "over the budget of 5") {
		t.Errorf("detail = %q", ch.first[0].Detail)
	}
}

func TestMemoCounterCountsOnce(t *testing.T) {
	calls := 0
	mc := &memoCounter{c: countingCounter{&calls}, counts: map[string]int{}}
	for range 3 {
		if n := mc.Count("hello world"); n != 2 {
			t.Fatalf("count = %d", n)
		}
	}
	if calls != 1 || mc.Name() != "counting" {
		t.Fatalf("the tokenizer ran %d times", calls)
	}
}

type countingCounter struct{ n *int }

func (countingCounter) Name() string { return "counting" }
func (c countingCounter) Count(s string) int {
	*c.n++
	return len(strings.Fields(s))
}

func TestPercentiles(t *testing.T) {
	if m, p, x := percentiles(nil); m != 0 || p != 0 || x != 0 {
		t.Fatal("empty")
	}
	var ds []time.Duration
	for i := 200; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Microsecond) // 1..200 µs, in reverse
	}
	m, p, x := percentiles(ds)
	if m != 100 || p != 198 || x != 200 {
		t.Fatalf("median %v, p99 %v, max %v", m, p, x)
	}
}
