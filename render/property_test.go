package render_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/tokenizer"
)

// randomMemory builds a random run that opens, as agent runs do, with a
// system prompt and the task (pinned), then mixes every step kind:
// multi-call actions with error results, step errors and observations,
// plans, scratchpad notes, summaries, later tasks and system prompts, and
// messages between agents, with images in tasks, tool results and the
// assistant's messages. Texts include empty and blank ones.
func randomMemory(t testing.TB, r *rand.Rand, counter tokenizer.Counter, format agentmem.Format, n int) *agentmem.Memory {
	t.Helper()
	words := []string{"alpha", "beta", "δέλτα", `{"k":1}`, "func main()", "\n", "  ", "42", "日本語", "🙂"}
	text := func(maxWords int) string {
		switch r.IntN(20) {
		case 0:
			return ""
		case 1:
			return " \n"
		}
		w := make([]string, 1+r.IntN(maxWords))
		for i := range w {
			w[i] = words[r.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	// Any pinning: contexts must be valid whatever is pinned, when the
	// system prompt or the task is dropped too.
	pinnings := []*agentmem.Pinning{nil, {SystemPrompts: true}, {}, {Tasks: true}}
	m := agentmem.New(agentmem.Options{Counter: counter, Format: format, Pinning: pinnings[r.IntN(len(pinnings))]})
	mustAdd(t, m, &agentmem.SystemPromptStep{Content: text(30)})
	task := &agentmem.TaskStep{Task: text(20)}
	if r.IntN(4) == 0 {
		task.Name, task.Data = "ann", json.RawMessage(`{"ticket": 7}`)
	}
	if r.IntN(3) == 0 {
		task.Images = []agentmem.Image{{URL: "https://x.test/a.png"}, {Data: []byte("\x89PNG\r\n\x1a\n"), MediaType: "image/png"}}
	}
	mustAdd(t, m, task)
	for i := range n {
		var s agentmem.Step
		switch k := r.IntN(20); {
		case k < 10:
			a := &agentmem.ActionStep{ModelOutput: text(15)}
			if r.IntN(4) == 0 {
				a.ModelOutput, a.Thought = "", text(5)
			}
			if r.IntN(6) == 0 {
				a.Code = "print(1)"
			}
			for c := range r.IntN(4) {
				id := fmt.Sprintf("call_%d_%d", i, c)
				args := fmt.Sprintf(`{"q": %d}`, c)
				if r.IntN(5) == 0 {
					args = "not json"
				}
				a.ToolCalls = append(a.ToolCalls, agentmem.ToolCall{ID: id, Name: []string{"search", "read", "run"}[r.IntN(3)], Arguments: args})
				res := agentmem.ToolResult{CallID: id, Content: text(100), IsError: r.IntN(5) == 0}
				if r.IntN(6) == 0 { // a screenshot
					res.Images = []agentmem.Image{{Data: []byte("\x89PNG\r\n\x1a\n"), MediaType: "image/png"}, {URL: "https://x.test/s.png"}}[:1+r.IntN(2)]
				}
				a.Results = append(a.Results, res)
			}
			if r.IntN(8) == 0 {
				a.Images = []agentmem.Image{{URL: "https://x.test/sketch.png"}}
			}
			if r.IntN(4) == 0 {
				a.Observation = text(30)
			}
			if r.IntN(6) == 0 {
				a.Error = text(5)
			}
			if r.IntN(6) == 0 {
				a.Name, a.Data = "coder", json.RawMessage(`{"ok": false}`)
			}
			s = a
		case k == 10:
			s = &agentmem.PlanningStep{Plan: text(20)}
		case k == 11:
			s = &agentmem.ScratchpadStep{Content: text(10)}
		case k == 12:
			s = &agentmem.TaskStep{Task: text(10)}
		case k == 13:
			s = &agentmem.SummaryStep{Summary: text(20), Covers: []agentmem.Range{{From: 0, To: i}}}
		case k == 14:
			s = &agentmem.FinalAnswerStep{Answer: text(5)}
		case k == 15:
			s = &agentmem.SystemPromptStep{Content: text(5)}
		case k == 16:
			s = &agentmem.MessageStep{Message: agentmem.Message{
				Role: agentmem.RoleAgentCall, Name: "planner", Content: agentmem.Text(text(10)),
				AgentCalls: []agentmem.AgentCall{{Agent: "coder", Request: text(5)}},
			}}
		case k == 17:
			s = &agentmem.MessageStep{Message: agentmem.Message{
				Role: agentmem.RoleAgentResponse, Name: "coder", Content: agentmem.Text(text(10)),
				Data: json.RawMessage(`{"done": true}`), AgentCalls: []agentmem.AgentCall{{Agent: "tester", Request: text(3)}},
			}}
		case k == 18:
			s = &agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleUser, Name: "ann",
				Content: agentmem.Content{agentmem.TextPart(text(5)), img}}}
		default:
			msg := agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text(text(8))}
			if r.IntN(4) == 0 {
				msg.Content = append(msg.Content, img)
			}
			s = &agentmem.MessageStep{Message: msg}
		}
		mustAdd(t, m, s)
	}
	if r.IntN(4) == 0 {
		if _, err := m.SetSummary(bg, text(20), r.IntN(n+1)); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// TestPropertyContextValid renders random memories in every format at
// random budgets and checks that the messages are valid for the target
// API, fit the budget, and cost exactly what Context reports.
func TestPropertyContextValid(t *testing.T) {
	counters := []tokenizer.Counter{tokenizer.NewHeuristic(), mustCounter(t, tokenizer.O200kBase)}
	formats := []agentmem.Format{render.OpenAI, render.Anthropic, render.Observation}
	iterations := 80
	if testing.Short() {
		iterations = 15
	}
	for it := range iterations {
		r := rand.New(rand.NewPCG(uint64(it), 42))
		counter := counters[it%len(counters)]
		m := randomMemory(t, r, counter, formats[r.IntN(len(formats))], 1+r.IntN(50))
		for _, f := range formats {
			full, err := m.Context(bg, agentmem.ContextOptions{Format: f})
			if err != nil {
				t.Fatal(err)
			}
			checkContext(t, fmt.Sprintf("iteration %d %s unlimited", it, f.Name()), m, f, counter, full, 0)
			for range 6 {
				budget := 1 + r.IntN(full.Tokens+20)
				opts := agentmem.ContextOptions{Format: f, Budget: budget, TruncateToFill: r.IntN(2) == 0, SummaryMode: r.IntN(5) == 0, DropOversizedNewest: r.IntN(4) == 0}
				c, err := m.Context(bg, opts)
				if err != nil {
					var be *agentmem.BudgetError
					if !errors.As(err, &be) || be.Required <= budget {
						t.Fatalf("iteration %d %s budget %d: %v", it, f.Name(), budget, err)
					}
					continue
				}
				checkContext(t, fmt.Sprintf("iteration %d %s budget %d %+v", it, f.Name(), budget, opts), m, f, counter, c, budget)
				again, err := m.Context(bg, opts)
				if err != nil || !reflect.DeepEqual(again.Messages, c.Messages) {
					t.Fatalf("iteration %d %s: a second render differs (%v)", it, f.Name(), err)
				}
			}
		}
	}
}

func checkContext(t *testing.T, what string, m *agentmem.Memory, f agentmem.Format, counter tokenizer.Counter, c *agentmem.Context, budget int) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: %s\n%s", what, fmt.Sprintf(format, args...), show(c.Messages))
	}
	if err := render.Validate(f.Name(), c.Messages); err != nil {
		fail("invalid: %v", err)
	}
	if budget > 0 && c.Tokens > budget {
		fail("over budget: %d > %d", c.Tokens, budget)
	}
	if got := agentmem.RequestTokens(counter, c.Messages); got != c.Tokens {
		fail("Context reports %d tokens, its messages cost %d", c.Tokens, got)
	}
	// Every tool call of the steps shown is in the messages, once.
	var wantCalls, gotCalls []string
	for _, n := range c.Steps {
		if s, ok := m.Step(n); ok {
			if a, ok := s.(*agentmem.ActionStep); ok {
				for _, tc := range a.ToolCalls {
					wantCalls = append(wantCalls, tc.ID)
				}
			}
		}
	}
	for _, msg := range c.Messages {
		for _, tc := range msg.ToolCalls {
			gotCalls = append(gotCalls, tc.ID)
		}
		for _, p := range msg.Content {
			if p.Type == agentmem.PartToolUse {
				gotCalls = append(gotCalls, p.ToolCall.ID)
			}
		}
	}
	if f.Name() == "observation" {
		gotCalls = nil
		for _, msg := range c.Messages {
			gotCalls = append(gotCalls, make([]string, strings.Count(msg.Text(), "Action: "))...)
		}
		if len(gotCalls) < len(wantCalls) {
			fail("%d Action lines for %d calls", len(gotCalls), len(wantCalls))
		}
	} else if !reflect.DeepEqual(gotCalls, wantCalls) && len(gotCalls)+len(wantCalls) > 0 {
		fail("tool calls shown %v, want %v", gotCalls, wantCalls)
	}
	// The wire encoding of the messages is valid JSON of the right shape.
	body, err := render.Encode(f.Name(), c.Messages)
	if err != nil {
		fail("encode: %v", err)
	}
	if _, err := json.Marshal(body); err != nil {
		fail("marshal: %v", err)
	}
	checkAppendJSON(t, f.Name(), c.Messages)
	if f.Name() == "anthropic" {
		req := body.(render.AnthropicBody)
		want := len(c.Messages)
		if want > 0 && c.Messages[0].Role == agentmem.RoleSystem {
			want--
		}
		if len(req.Messages) != want {
			fail("wire body has %d messages for %d (system apart)", len(req.Messages), want)
		}
	}
}

func mustCounter(t testing.TB, name string) tokenizer.Counter {
	t.Helper()
	c, err := tokenizer.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
