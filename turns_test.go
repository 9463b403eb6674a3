package agentmem_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/turncheck"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/tokenizer"
)

// randomText returns up to maxWords words.
func randomText(r *rand.Rand, maxWords int) string {
	w := make([]string, 1+r.IntN(maxWords))
	for i := range w {
		w[i] = []string{"alpha", "beta", "gamma", "δέλτα", "{\"k\":1}", "func", "\n", "42"}[r.IntN(8)]
	}
	return strings.Join(w, " ")
}

// randomChat adds a random chat through the message API: a system prompt,
// then turns of a question, tool calls whose results are sometimes long
// (and sometimes arrive after the next question), and an answer;
// sometimes a summary of the older turns.
func randomChat(t *testing.T, r *rand.Rand, m *agentmem.Memory, turns int) {
	t.Helper()
	ctx := context.Background()
	add := func(msg agentmem.Message) {
		t.Helper()
		if err := m.AddMessage(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	add(agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text(randomText(r, 30))})
	var late []agentmem.Message
	for i := range turns {
		add(agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(fmt.Sprintf("Q%d %s", i, randomText(r, 20)))})
		for _, msg := range late {
			add(msg)
		}
		late = nil
		for c := range r.IntN(3) {
			id := fmt.Sprintf("t%d_%d", i, c)
			add(agentmem.Message{Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{{ID: id, Name: "search", Arguments: `{"q":1}`}}})
			result := agentmem.Message{Role: agentmem.RoleTool, ToolCallID: id, Content: agentmem.Text(randomText(r, 40+r.IntN(4)*300))}
			if r.IntN(6) == 0 {
				late = append(late, result)
				break // the answer waits for the result
			}
			add(result)
		}
		if late == nil {
			add(agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text(fmt.Sprintf("A%d %s", i, randomText(r, 30)))})
		}
		if r.IntN(8) == 0 {
			if _, err := m.SetSummary(ctx, fmt.Sprintf("summary after turn %d", i), 1+r.IntN(6)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// randomRun adds a random agent run: a system prompt, a task, actions
// with long results, plans and notes, sometimes a follow-up task and a
// summary.
func randomRun(t *testing.T, r *rand.Rand, m *agentmem.Memory, n int) {
	t.Helper()
	ctx := context.Background()
	mustAdd(t, m, &agentmem.SystemPromptStep{Content: randomText(r, 30)})
	mustAdd(t, m, &agentmem.TaskStep{Task: randomText(r, 20)})
	for i := range n {
		var s agentmem.Step
		switch k := r.IntN(12); {
		case k < 8:
			a := &agentmem.ActionStep{ModelOutput: randomText(r, 15)}
			for c := range r.IntN(3) {
				id := fmt.Sprintf("c%d_%d", i, c)
				a.ToolCalls = append(a.ToolCalls, agentmem.ToolCall{ID: id, Name: "tool", Arguments: `{}`})
				a.Results = append(a.Results, agentmem.ToolResult{CallID: id, Content: randomText(r, 20+r.IntN(3)*400)})
			}
			if r.IntN(3) == 0 {
				a.Observation = randomText(r, 200)
			}
			s = a
		case k == 8:
			s = &agentmem.PlanningStep{Plan: randomText(r, 20)}
		case k == 9:
			s = &agentmem.ScratchpadStep{Content: randomText(r, 10)}
		case k == 10:
			s = &agentmem.TaskStep{Task: randomText(r, 10)}
		default:
			if _, err := m.SetSummary(ctx, "progress so far: "+randomText(r, 20), 2+r.IntN(8)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mustAdd(t, m, s)
	}
}

// TestPropertyWholeTurns fits random chats and agent runs, under every
// pinning and format, to hundreds of budgets, with and without truncation:
// no context shows part of a turn without its question, pinned steps
// (the newest summary among them) are always shown, and a context that
// cannot hold them and the newest question is a typed error.
func TestPropertyWholeTurns(t *testing.T) {
	counter := tokenizer.NewHeuristic()
	pinnings := []agentmem.Pinning{agentmem.DefaultPinning, agentmem.ChatPinning, {}, {SystemPrompts: true, Tasks: true, Summary: true}}
	iterations := 40
	if testing.Short() || raceEnabled {
		iterations = 8
	}
	shown, failed := 0, 0
	for it := range iterations {
		for pi, pin := range pinnings {
			r := rand.New(rand.NewPCG(uint64(it), uint64(pi)))
			m := agentmem.New(agentmem.Options{Counter: counter, Pinning: &pin, Policy: &agentmem.Policy{}})
			if it%2 == 0 {
				randomChat(t, r, m, 1+r.IntN(14))
			} else {
				randomRun(t, r, m, 1+r.IntN(40))
			}
			steps := m.Steps()
			full := m.Tokens()
			for _, name := range render.Names() {
				format, err := render.ByName(name)
				if err != nil {
					t.Fatal(err)
				}
				for range 8 {
					budget := 1 + r.IntN(full+100)
					opts := agentmem.ContextOptions{Budget: budget, Format: format, TruncateToFill: r.IntN(2) == 0, DropOversizedNewest: r.IntN(4) == 0}
					c, err := m.Context(bg, opts)
					if err != nil {
						var be *agentmem.BudgetError
						if !errors.As(err, &be) || !errors.Is(err, agentmem.ErrBudgetTooSmall) || be.Required <= budget {
							t.Fatalf("iteration %d pinning %+v %s budget %d: %v", it, pin, name, budget, err)
						}
						failed++
						continue
					}
					shown++
					if c.Tokens > budget {
						t.Fatalf("over budget: %d > %d", c.Tokens, budget)
					}
					if err := render.Validate(name, c.Messages); err != nil {
						t.Fatalf("iteration %d %s: invalid request: %v", it, name, err)
					}
					checkTurns(t, pin, steps, c)
					checkNewestQuestion(t, steps, c)
				}
			}
		}
	}
	if shown == 0 || failed == 0 {
		t.Fatalf("%d contexts shown, %d refused: the budgets should give both", shown, failed)
	}
}

// checkNewestQuestion checks that a context shows the newest question of
// the working set, if it has one.
func checkNewestQuestion(t *testing.T, steps []agentmem.Step, c *agentmem.Context) {
	t.Helper()
	if err := turncheck.NewestQuestion(steps, c.Steps); err != nil {
		t.Fatal(err)
	}
}

// TestWholeTurnsChat is the reproduction: a chat of ten turns of
// a question, a tool call with a long result and an answer, read at every
// budget from 1,200 to 16,000 tokens: no answer is shown without its
// question, and the newest turn is always shown.
func TestWholeTurnsChat(t *testing.T) {
	counter := mustCounter(t, tokenizer.O200kBase)
	m := agentmem.New(agentmem.Options{Counter: counter, Pinning: &agentmem.ChatPinning})
	ctx := context.Background()
	_ = m.AddMessage(ctx, agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text("You answer questions about the weather.")})
	cities := []string{"Paris", "Vienna", "Oslo", "Rome", "Lima", "Cairo", "Quito", "Perth", "Dublin", "Kyoto"}
	for i, city := range cities {
		id := fmt.Sprintf("call_%d", i)
		for _, msg := range []agentmem.Message{
			{Role: agentmem.RoleUser, Content: agentmem.Text(fmt.Sprintf("Q%d: what is the weather in %s?", i, city))},
			{Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{{ID: id, Name: "weather", Arguments: fmt.Sprintf(`{"city":%q}`, city)}}},
			{Role: agentmem.RoleTool, ToolCallID: id, Content: agentmem.Text(strings.Repeat(city+" hourly forecast: mild, 14 degrees, light wind. ", 200))},
			{Role: agentmem.RoleAssistant, Content: agentmem.Text(fmt.Sprintf("A%d: %s is mild", i, city))},
		} {
			if err := m.AddMessage(ctx, msg); err != nil {
				t.Fatal(err)
			}
		}
	}
	steps := m.Steps()
	for budget := 1200; budget <= 16000; budget += 100 {
		for _, truncate := range []bool{false, true} {
			c, err := m.Context(ctx, agentmem.ContextOptions{Budget: budget, TruncateToFill: truncate})
			if err != nil {
				t.Fatalf("budget %d: %v", budget, err)
			}
			checkTurns(t, agentmem.ChatPinning, steps, c)
			checkNewestQuestion(t, steps, c)
			text := ""
			for _, msg := range c.Messages {
				text += msg.Text() + "\n"
			}
			for i := range cities {
				if strings.Contains(text, fmt.Sprintf("A%d:", i)) && !strings.Contains(text, fmt.Sprintf("Q%d:", i)) {
					t.Fatalf("budget %d: answer %d shown without its question:\n%s", budget, i, text)
				}
			}
		}
	}
}
