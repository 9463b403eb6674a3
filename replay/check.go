package replay

import (
	"fmt"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/tokenizer"
)

// Violations counts the renders that broke each guarantee (see the package
// documentation for the kinds). Each kind counts at most once per render.
type Violations struct {
	OverBudget        int `json:"over_budget"`
	TokensMismatch    int `json:"tokens_mismatch"`
	SystemMissing     int `json:"system_missing"`
	TaskMissing       int `json:"task_missing"`
	OrphanToolResult  int `json:"orphan_tool_result"`
	CallWithoutResult int `json:"call_without_result"`
	APIRule           int `json:"api_rule"`
	WindowGap         int `json:"window_gap"`
	// Total is the sum of the kinds above.
	Total int `json:"total"`
}

// Violation describes the first render that broke one guarantee.
type Violation struct {
	// Kind is the JSON name of the counter, e.g. "over_budget".
	Kind string
	// Render is the 1-based number of the render.
	Render int
	// Line is the trace line the render came before (the last line plus
	// one for the final render).
	Line int
	// Detail says what was wrong.
	Detail string
}

// checker checks rendered contexts. It is used by one goroutine.
type checker struct {
	format  string
	budget  int
	recount *memoCounter

	systemText string       // the trace's first system prompt
	taskText   string       // the text of the first user message
	hasTask    bool         // the task has been added
	pinned     map[int]bool // step numbers of pinned steps
	turn       []int        // by step number: the number of its turn's question, -1 before the first
	v          Violations
	first      []Violation
	seen       map[string]bool
}

func newChecker(format string, budget int, c tokenizer.Counter) *checker {
	return &checker{
		format:  format,
		budget:  budget,
		recount: &memoCounter{c: c, counts: make(map[string]int)},
		pinned:  make(map[int]bool),
		seen:    make(map[string]bool),
	}
}

// memoCounter counts with its own tokenizer and remembers each text's
// count. Rendered contexts share their texts from one render to the next,
// so each text is tokenized once; later lookups only hash it.
type memoCounter struct {
	c      tokenizer.Counter
	counts map[string]int
}

func (m *memoCounter) Name() string { return m.c.Name() }

func (m *memoCounter) Count(s string) int {
	if n, ok := m.counts[s]; ok {
		return n
	}
	n := m.c.Count(s)
	m.counts[s] = n
	return n
}

// report counts one violation of a kind in the current render.
func (ch *checker) report(kind string, count *int, render, line int, format string, args ...any) {
	*count++
	ch.v.Total++
	if !ch.seen[kind] {
		ch.seen[kind] = true
		ch.first = append(ch.first, Violation{Kind: kind, Render: render, Line: line, Detail: fmt.Sprintf(format, args...)})
	}
}

// check checks one rendered context. newest is the number of the newest
// step of the working set (-1 if it is empty); render and line locate the
// render for the report.
func (ch *checker) check(c *agentmem.Context, newest, render, line int) {
	msgs := c.Messages
	cost := agentmem.RequestTokens(ch.recount, msgs)
	if cost > ch.budget || c.Tokens > ch.budget {
		ch.report("over_budget", &ch.v.OverBudget, render, line, "the request costs %d tokens (the engine says %d), over the budget of %d", cost, c.Tokens, ch.budget)
	}
	if cost != c.Tokens {
		ch.report("tokens_mismatch", &ch.v.TokensMismatch, render, line, "the engine says %d tokens, the recount %d", c.Tokens, cost)
	}
	if ch.systemText != "" && !ch.hasSystem(msgs) {
		ch.report("system_missing", &ch.v.SystemMissing, render, line, "the first message is not the system prompt")
	}
	if ch.hasTask && ch.taskText != "" && !ch.hasTaskText(msgs) {
		ch.report("task_missing", &ch.v.TaskMissing, render, line, "no user message holds the task")
	}
	orphan, unanswered := toolPairing(msgs)
	if orphan != "" {
		ch.report("orphan_tool_result", &ch.v.OrphanToolResult, render, line, "%s", orphan)
	}
	if unanswered != "" {
		ch.report("call_without_result", &ch.v.CallWithoutResult, render, line, "%s", unanswered)
	}
	if orphan == "" && unanswered == "" {
		if err := rendervalidate(ch.format, msgs); err != nil {
			ch.report("api_rule", &ch.v.APIRule, render, line, "%v", err)
		}
	}
	if gap := ch.windowGap(c, newest); gap != "" {
		ch.report("window_gap", &ch.v.WindowGap, render, line, "%s", gap)
	}
}

// rendervalidate is render.Validate; a variable so that tests can check
// that its failures are counted.
var rendervalidate = render.Validate

// hasSystem reports whether the first message is a system message holding
// the system prompt (Anthropic's format merges every system prompt into
// one leading message, part by part).
func (ch *checker) hasSystem(msgs []agentmem.Message) bool {
	if len(msgs) == 0 || msgs[0].Role != agentmem.RoleSystem {
		return false
	}
	for _, p := range msgs[0].Content {
		if p.Text == ch.systemText {
			return true
		}
	}
	return false
}

// hasTaskText reports whether a user message has a part holding the task.
func (ch *checker) hasTaskText(msgs []agentmem.Message) bool {
	for _, m := range msgs {
		if m.Role != agentmem.RoleUser {
			continue
		}
		for _, p := range m.Content {
			if p.Text == ch.taskText {
				return true
			}
		}
	}
	return false
}

// toolPairing checks that every tool result answers an unanswered call of
// the nearest assistant message before it. Every call must be answered
// before the next assistant message or the end. Calls are OpenAI tool
// calls or tool_use parts; results are tool messages or tool_result parts.
// It returns a description of the first orphan and of the first call
// without a result, or "".
func toolPairing(msgs []agentmem.Message) (orphan, unanswered string) {
	var open []string // unanswered calls of the latest assistant message
	closeTurn := func(i int) {
		if len(open) > 0 && unanswered == "" {
			unanswered = fmt.Sprintf("tool call %q is not answered before message %d", open[0], i)
		}
		open = open[:0]
	}
	answer := func(i int, id string) {
		for k, c := range open {
			if c == id {
				open = append(open[:k], open[k+1:]...)
				return
			}
		}
		if orphan == "" {
			orphan = fmt.Sprintf("message %d: tool result for %q answers no call of the preceding assistant message", i, id)
		}
	}
	for i, m := range msgs {
		if m.Role == agentmem.RoleAssistant {
			closeTurn(i)
			for _, tc := range m.ToolCalls {
				open = append(open, tc.ID)
			}
			for _, p := range m.Content {
				if p.Type == agentmem.PartToolUse && p.ToolCall != nil {
					open = append(open, p.ToolCall.ID)
				}
			}
			continue
		}
		if m.Role == agentmem.RoleTool {
			answer(i, m.ToolCallID)
		}
		for _, p := range m.Content {
			if p.Type == agentmem.PartToolResult {
				answer(i, p.ToolCallID)
			}
		}
	}
	closeTurn(len(msgs))
	return orphan, unanswered
}

// windowGap checks that the unpinned steps shown are whole turns, the
// newest ones. After the replay's adds, the working set holds every step
// number from 0 to newest. So, walking back from the newest, each shown
// unpinned step must be the next unpinned, not pending number. One gap is
// allowed: between the oldest step shown and the newest of its turn, when
// the oldest is that turn's question (a turn shown in part). The oldest
// step shown must start its turn, unless the turn's question is pinned or
// there is none. Showing no unpinned step is not a gap, since the newest
// step may not fit. It returns a description or "".
func (ch *checker) windowGap(c *agentmem.Context, newest int) string {
	var pending map[int]bool
	for _, p := range c.Pending {
		if pending == nil {
			pending = make(map[int]bool, len(c.Pending))
		}
		pending[p.Step] = true
	}
	var shown []int
	for _, n := range c.Steps {
		if !ch.pinned[n] {
			shown = append(shown, n)
		}
	}
	if len(shown) == 0 {
		return ""
	}
	expect := newest
	for k := len(shown) - 1; k >= 0; k-- {
		n := shown[k]
		for expect > n && (ch.pinned[expect] || pending[expect]) {
			expect--
		}
		if n == expect {
			expect--
			continue
		}
		if k == 0 && ch.turnOf(expect) == n {
			return "" // the question of a turn shown in part
		}
		if k == len(shown)-1 {
			return fmt.Sprintf("the window ends at step %d, not at the newest step %d", n, expect)
		}
		return fmt.Sprintf("step %d follows step %d in the window; step %d is missing", shown[k+1], n, expect)
	}
	if t := ch.turnOf(shown[0]); t >= 0 && t != shown[0] && !ch.pinned[t] {
		return fmt.Sprintf("step %d is shown without the question of its turn, step %d", shown[0], t)
	}
	return ""
}

// turnOf returns the number of the question of step n's turn, or -1
// before the first question.
func (ch *checker) turnOf(n int) int {
	if n < 0 || n >= len(ch.turn) {
		return -1
	}
	return ch.turn[n]
}
