package agentmem_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/turncheck"
	"github.com/agentmem/agentmem/tokenizer"
)

// randomHistory builds a random run: a system prompt and task, then a mix
// of every step kind, multi-call actions included.
func randomHistory(t *testing.T, r *rand.Rand, m *agentmem.Memory, n int) {
	t.Helper()
	text := func(maxWords int) string {
		w := make([]string, 1+r.IntN(maxWords))
		for i := range w {
			w[i] = []string{"alpha", "beta", "gamma", "δέλτα", "{\"k\":1}", "func", "\n", "42"}[r.IntN(8)]
		}
		return strings.Join(w, " ")
	}
	mustAdd(t, m, &agentmem.SystemPromptStep{Content: text(30)})
	mustAdd(t, m, &agentmem.TaskStep{Task: text(20)})
	for i := range n {
		var s agentmem.Step
		switch k := r.IntN(10); {
		case k < 6:
			a := &agentmem.ActionStep{ModelOutput: text(15)}
			for c := range r.IntN(4) {
				id := fmt.Sprintf("c%d_%d", i, c)
				a.ToolCalls = append(a.ToolCalls, agentmem.ToolCall{ID: id, Name: "tool", Arguments: `{"q":"` + fmt.Sprint(c) + `"}`})
				a.Results = append(a.Results, agentmem.ToolResult{CallID: id, Content: text(200)})
			}
			if r.IntN(8) == 0 {
				a.Error = text(5)
			}
			s = a
		case k == 6:
			s = &agentmem.PlanningStep{Plan: text(20)}
		case k == 7:
			s = &agentmem.ScratchpadStep{Content: text(10)}
		case k == 8:
			s = &agentmem.TaskStep{Task: text(10)}
		default:
			s = &agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleAgentResponse, Content: agentmem.Text(text(10))}}
		}
		mustAdd(t, m, s)
	}
}

// checkTurns checks what a context shows of a working set against the
// rules of fitting (turncheck.Check).
func checkTurns(t *testing.T, pin agentmem.Pinning, steps []agentmem.Step, c *agentmem.Context) {
	t.Helper()
	if err := turncheck.Check(pin, steps, c.Steps, c.DroppedSteps); err != nil {
		t.Fatal(err)
	}
}

// checkInvariants checks a rendered OpenAI context against the rules every
// render must keep.
func checkInvariants(t *testing.T, m *agentmem.Memory, c *agentmem.Context, counter tokenizer.Counter, budget int) {
	t.Helper()
	if c.Tokens > budget {
		t.Fatalf("over budget: %d > %d", c.Tokens, budget)
	}
	if got := agentmem.RequestTokens(counter, c.Messages); got != c.Tokens {
		t.Fatalf("reported %d tokens, messages cost %d", c.Tokens, got)
	}
	steps := m.Steps()
	if c.Messages[0].Role != agentmem.RoleSystem {
		t.Fatal("first message is not the system prompt")
	}
	checkTurns(t, m.Pinning(), steps, c)
	// Pairs intact: every tool message answers an open call, every call is answered.
	open := map[string]bool{}
	for i, msg := range c.Messages {
		if msg.Role == agentmem.RoleTool {
			if !open[msg.ToolCallID] {
				t.Fatalf("message %d: tool result %q without its call", i, msg.ToolCallID)
			}
			delete(open, msg.ToolCallID)
			continue
		}
		if len(open) > 0 {
			t.Fatalf("message %d: calls %v left without results", i, open)
		}
		for _, tc := range msg.ToolCalls {
			open[tc.ID] = true
		}
	}
	if len(open) > 0 {
		t.Fatalf("calls %v left without results at the end", open)
	}
}

func TestPropertyContextInvariants(t *testing.T) {
	counters := []tokenizer.Counter{tokenizer.NewHeuristic(), mustCounter(t, tokenizer.O200kBase)}
	// 300 histories x 10 budgets: thousands of renders. The race build
	// runs a sample: it hunts data races, and the plain build covers the
	// invariants in full.
	iterations := 300
	if testing.Short() || raceEnabled {
		iterations = 30
	}
	for it := range iterations {
		r := rand.New(rand.NewPCG(uint64(it), 7))
		counter := counters[it%len(counters)]
		m := agentmem.New(agentmem.Options{Counter: counter})
		randomHistory(t, r, m, 1+r.IntN(60))
		full := m.Tokens()
		for range 10 {
			budget := 1 + r.IntN(full+50)
			opts := agentmem.ContextOptions{Budget: budget, TruncateToFill: r.IntN(2) == 0, DropOversizedNewest: r.IntN(4) == 0}
			c, err := m.Context(bg, opts)
			if err != nil {
				var be *agentmem.BudgetError
				if !errors.As(err, &be) || be.Required <= budget {
					t.Fatalf("iteration %d budget %d: %v", it, budget, err)
				}
				continue
			}
			checkInvariants(t, m, c, counter, budget)
			// A newest step reported truncated is the newest of all, shown
			// last; DropOversizedNewest (without TruncateToFill, which
			// truncates whichever step does not fit) drops it instead.
			steps := m.Steps()
			newest := steps[len(steps)-1].Info().Number
			if c.NewestTruncated && ((opts.DropOversizedNewest && !opts.TruncateToFill) || c.Steps[len(c.Steps)-1] != newest || c.Truncated[len(c.Truncated)-1] != newest) {
				t.Fatalf("iteration %d budget %d: newest step %d reported truncated, steps %v, truncated %v", it, budget, newest, c.Steps, c.Truncated)
			}
		}
	}
}

func mustCounter(t *testing.T, name string) tokenizer.Counter {
	t.Helper()
	c, err := tokenizer.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
