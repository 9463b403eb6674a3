package agentmem_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
)

// The helpers of the strategy tests carry an "st" prefix so that they do
// not collide with those of other test files of the package.

// stWords counts one token per whitespace-separated word.
type stWords struct{}

func (stWords) Name() string       { return "st-words" }
func (stWords) Count(s string) int { return len(strings.Fields(s)) }
func stCtx() context.Context       { return context.Background() }
func stEnv() *agentmem.Env         { return stEnvAt(stNow) }
func stEnvAt(t time.Time) *agentmem.Env {
	return agentmem.NewEnv(agentmem.EnvOptions{Now: t, Counter: stWords{}})
}

var stNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// stStep builds one step of kind k: S system prompt, T task, A action,
// P plan, N scratchpad note, M message, F final answer, U summary.
func stStep(k byte, i int) agentmem.Step {
	switch k {
	case 'S':
		return &agentmem.SystemPromptStep{Content: fmt.Sprintf("system prompt %d", i)}
	case 'T':
		return &agentmem.TaskStep{Task: fmt.Sprintf("task number %d", i)}
	case 'A':
		return stAction(i, fmt.Sprintf("observation of step %d", i))
	case 'P':
		return &agentmem.PlanningStep{Plan: fmt.Sprintf("plan %d", i)}
	case 'N':
		return &agentmem.ScratchpadStep{Content: fmt.Sprintf("note %d", i)}
	case 'M':
		return &agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(fmt.Sprintf("message %d", i))}}
	case 'F':
		return &agentmem.FinalAnswerStep{Answer: fmt.Sprintf("answer %d", i)}
	case 'U':
		return &agentmem.SummaryStep{Summary: fmt.Sprintf("summary %d", i), Covers: []agentmem.Range{{From: 100 + i, To: 100 + i}}}
	}
	panic("unknown step kind " + string(k))
}

// stList builds a list of steps from a spec such as "S T A A", numbering
// them 0, 1, ... with IDs "s0", "s1", ... and times one minute apart
// ending at stNow.
func stList(spec string) []agentmem.Step {
	kinds := strings.Fields(spec)
	out := make([]agentmem.Step, len(kinds))
	for i, k := range kinds {
		s := stStep(k[0], i)
		stSetInfo(s, agentmem.StepInfo{Number: i, ID: fmt.Sprintf("s%d", i), Time: stNow.Add(time.Duration(i-len(kinds)+1) * time.Minute)})
		out[i] = s
	}
	return out
}

// stSetInfo sets the header of a step built by the tests.
func stSetInfo(s agentmem.Step, info agentmem.StepInfo) {
	switch v := s.(type) {
	case *agentmem.SystemPromptStep:
		v.StepInfo = info
	case *agentmem.TaskStep:
		v.StepInfo = info
	case *agentmem.ActionStep:
		v.StepInfo = info
	case *agentmem.PlanningStep:
		v.StepInfo = info
	case *agentmem.ScratchpadStep:
		v.StepInfo = info
	case *agentmem.MessageStep:
		v.StepInfo = info
	case *agentmem.FinalAnswerStep:
		v.StepInfo = info
	case *agentmem.SummaryStep:
		v.StepInfo = info
	}
}

func stAction(i int, obs string) *agentmem.ActionStep {
	id := fmt.Sprintf("call_%d", i)
	return &agentmem.ActionStep{
		ModelOutput: fmt.Sprintf("step %d: let me look", i),
		ToolCalls:   []agentmem.ToolCall{{ID: id, Name: "search", Arguments: `{"q":"x"}`}},
		Results:     []agentmem.ToolResult{{CallID: id, Content: obs}},
	}
}

func stNums(steps []agentmem.Step) []int {
	out := make([]int, len(steps))
	for i, s := range steps {
		out[i] = s.Info().Number
	}
	return out
}

func stApply(t *testing.T, s agentmem.Strategy, steps []agentmem.Step, env *agentmem.Env) []agentmem.Step {
	t.Helper()
	out, err := s.Apply(stCtx(), steps, env)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return out
}

func stWantNums(t *testing.T, what string, got []agentmem.Step, want ...int) {
	t.Helper()
	if g := stNums(got); !slices.Equal(g, want) {
		t.Fatalf("%s kept %v, want %v", what, g, want)
	}
}

// stMem returns a memory counting words, with a clock the test can move
// and IDs id-1, id-2, ...
func stMem(clock *time.Time) *agentmem.Memory {
	n := 0
	return agentmem.New(agentmem.Options{
		Counter: stWords{},
		Clock:   func() time.Time { return *clock },
		NewID:   func() string { n++; return fmt.Sprintf("id-%d", n) },
	})
}

func stAdd(t *testing.T, m *agentmem.Memory, steps ...agentmem.Step) {
	t.Helper()
	for _, s := range steps {
		if _, err := m.Add(stCtx(), s); err != nil {
			t.Fatalf("Add(%T): %v", s, err)
		}
	}
}

// stSeeded returns a memory with a system prompt, a task and n actions
// (steps 0, 1, then 2..n+1).
func stSeeded(t *testing.T, n int) (*agentmem.Memory, *time.Time) {
	t.Helper()
	clock := stNow
	m := stMem(&clock)
	stAdd(t, m, &agentmem.SystemPromptStep{Content: "you are helpful"}, &agentmem.TaskStep{Task: "fix the bug"})
	for i := range n {
		stAdd(t, m, stAction(i, fmt.Sprintf("observation number %d of a long tool output", i)))
	}
	return m, &clock
}

func TestKeepLastN(t *testing.T) {
	steps := stList("S T A A P A N A")
	stWantNums(t, "KeepLastN(3)", stApply(t, agentmem.KeepLastN(3), steps, stEnv()), 0, 1, 5, 6, 7)
	stWantNums(t, "KeepLastN(0)", stApply(t, agentmem.KeepLastN(0), steps, stEnv()), 0, 1)
	stWantNums(t, "KeepLastN(-1)", stApply(t, agentmem.KeepLastN(-1), steps, stEnv()), 0, 1)
	stWantNums(t, "KeepLastN(100)", stApply(t, agentmem.KeepLastN(100), steps, stEnv()), 0, 1, 2, 3, 4, 5, 6, 7)
	// Only the first task is pinned; a later one is an ordinary step.
	stWantNums(t, "KeepLastN(1) with two tasks", stApply(t, agentmem.KeepLastN(1), stList("S T A T A"), stEnv()), 0, 1, 4)
	// A nil Env pins the same steps.
	stWantNums(t, "KeepLastN(1), nil env", stApply(t, agentmem.KeepLastN(1), stList("A S T A A"), nil), 1, 2, 4)
	// Kept steps are the very values given.
	out := stApply(t, agentmem.KeepLastN(2), steps, stEnv())
	if out[0] != steps[0] || out[len(out)-1] != steps[len(steps)-1] {
		t.Fatal("KeepLastN did not return the steps it was given")
	}
}

func TestKeepLastNActions(t *testing.T) {
	steps := stList("S T A P A N A M A")
	stWantNums(t, "KeepLastNActions(2)", stApply(t, agentmem.KeepLastNActions(2), steps, stEnv()), 0, 1, 3, 5, 6, 7, 8)
	stWantNums(t, "KeepLastNActions(0)", stApply(t, agentmem.KeepLastNActions(0), steps, stEnv()), 0, 1, 3, 5, 7)
	stWantNums(t, "KeepLastNActions(9)", stApply(t, agentmem.KeepLastNActions(9), steps, stEnv()), 0, 1, 2, 3, 4, 5, 6, 7, 8)
}

func TestKeepSystemAndRecent(t *testing.T) {
	steps := stList("S T A A A S A")
	// The seeds' variant: the task is not kept once it is old.
	stWantNums(t, "KeepSystemAndRecent(2)", stApply(t, agentmem.KeepSystemAndRecent(2), steps, stEnv()), 0, 5, 6)
	stWantNums(t, "KeepSystemAndRecent(0)", stApply(t, agentmem.KeepSystemAndRecent(0), steps, stEnv()), 0, 5)
	stWantNums(t, "KeepSystemAndRecent(6)", stApply(t, agentmem.KeepSystemAndRecent(6), steps, stEnv()), 0, 1, 2, 3, 4, 5, 6)
}

func TestDropKinds(t *testing.T) {
	steps := stList("S T A N A N P T")
	stWantNums(t, "DropKinds(scratchpad, planning)", stApply(t, agentmem.DropKinds(agentmem.KindScratchpad, agentmem.KindPlanning), steps, stEnv()), 0, 1, 2, 4, 7)
	// Pinned steps stay even when their kind is dropped.
	stWantNums(t, "DropKinds(task, system)", stApply(t, agentmem.DropKinds(agentmem.KindTask, agentmem.KindSystemPrompt), steps, stEnv()), 0, 1, 2, 3, 4, 5, 6)
	stWantNums(t, "DropKinds()", stApply(t, agentmem.DropKinds(), steps, stEnv()), 0, 1, 2, 3, 4, 5, 6, 7)
}

func TestPruneOldObservations(t *testing.T) {
	steps := stList("S T A A N A A")
	long := strings.Repeat("x", 40)
	steps[2].(*agentmem.ActionStep).Results[0].Content = long
	steps[3].(*agentmem.ActionStep).Observation = "also printed " + long
	steps[5].(*agentmem.ActionStep).Results[0].Content = "short"
	steps[6].(*agentmem.ActionStep).Results[0].Content = long

	out := stApply(t, agentmem.PruneOldObservations(1, 10), steps, stEnv())
	stWantNums(t, "PruneOldObservations", out, 0, 1, 2, 3, 4, 5, 6)
	for i, s := range out {
		switch i {
		case 2, 3: // older actions with long output: truncated copies
			if s == steps[i] {
				t.Fatalf("step %d was not replaced", i)
			}
			if want := steps[i].(*agentmem.ActionStep).Truncate(10); !reflect.DeepEqual(s, want) {
				t.Fatalf("step %d = %+v, want Truncate(10) = %+v", i, s, want)
			}
			if !reflect.DeepEqual(s.Info(), steps[i].Info()) {
				t.Fatalf("step %d header changed: %+v", i, s.Info())
			}
		default: // non-actions, short output, the newest action: the same values
			if s != steps[i] {
				t.Fatalf("step %d was replaced", i)
			}
		}
	}
	if got := out[2].(*agentmem.ActionStep).Results[0].Content; got != "xxxxxxxxxx\n…[truncated 30 bytes]" {
		t.Fatalf("truncated result = %q", got)
	}

	// Applying it again changes nothing: text already cut is not cut again.
	again := stApply(t, agentmem.PruneOldObservations(1, 10), out, stEnv())
	for i := range again {
		if again[i] != out[i] {
			t.Fatalf("second application replaced step %d", i)
		}
	}
	// A smaller limit cuts further, counting the bytes cut from the original.
	shorter := stApply(t, agentmem.PruneOldObservations(1, 4), out, stEnv())
	if got, want := shorter[2].(*agentmem.ActionStep).Results[0].Content, agentmem.TruncateText(long, 4); got != want {
		t.Fatalf("re-truncated = %q, want %q", got, want)
	}
	// keepLastN larger than the number of actions keeps them all.
	all := stApply(t, agentmem.PruneOldObservations(10, 1), steps, stEnv())
	for i := range all {
		if all[i] != steps[i] {
			t.Fatalf("PruneOldObservations(10, 1) replaced step %d", i)
		}
	}
}

func TestPruneObservationsOlderThan(t *testing.T) {
	steps := stList("S T A A A A") // step i at stNow-(5-i) minutes
	long := strings.Repeat("y", 30)
	for _, s := range steps[2:] {
		s.(*agentmem.ActionStep).Results[0].Content = long
	}
	// A zero time is no known age: left alone.
	stSetInfo(steps[2], agentmem.StepInfo{Number: 2, ID: "s2"})

	out := stApply(t, agentmem.PruneObservationsOlderThan(90*time.Second, 5), steps, stEnv())
	for i, s := range out {
		truncated := s != steps[i]
		want := i == 3 // 2 minutes old; steps 4 and 5 are newer, step 2 has no time
		if truncated != want {
			t.Fatalf("step %d truncated = %v, want %v", i, truncated, want)
		}
	}
	// The clock is the Env's: ten minutes later every timed action is old.
	later := stApply(t, agentmem.PruneObservationsOlderThan(90*time.Second, 5), steps, stEnvAt(stNow.Add(10*time.Minute)))
	for i := 3; i < 6; i++ {
		if later[i] == steps[i] {
			t.Fatalf("step %d not truncated ten minutes later", i)
		}
	}
}

func TestPruneObservationsOlderThanUsesMemoryClock(t *testing.T) {
	clock := stNow
	m := stMem(&clock)
	stAdd(t, m, &agentmem.SystemPromptStep{Content: "sys"}, &agentmem.TaskStep{Task: "task"})
	long := strings.Repeat("z", 50)
	for i := range 4 {
		stAdd(t, m, stAction(i, long)) // numbers 2..5, one minute apart
		clock = clock.Add(time.Minute)
	}
	// Now is stNow+4m: steps 2 and 3 (added at +0m and +1m) are older than 150s.
	comp, err := m.Prune(stCtx(), agentmem.PruneObservationsOlderThan(150*time.Second, 8))
	if err != nil {
		t.Fatal(err)
	}
	if got := stNums(comp.Replaced); !slices.Equal(got, []int{2, 3}) {
		t.Fatalf("replaced %v, want [2 3]", got)
	}
	if len(comp.Removed) != 0 || len(comp.Added) != 0 || comp.Before != 6 || comp.After != 6 {
		t.Fatalf("compaction = %+v", comp)
	}
	for _, r := range comp.Replaced {
		if r.(*agentmem.ActionStep).Results[0].Content != long {
			t.Fatal("Replaced must hold the original versions")
		}
	}
	for _, s := range m.Steps() {
		a, ok := s.(*agentmem.ActionStep)
		if !ok {
			continue
		}
		if got, cut := a.Results[0].Content, a.Number <= 3; (got != long) != cut {
			t.Fatalf("step %d content %q", a.Number, got)
		}
	}
	// Pruning again at the same time changes nothing more.
	comp, err = m.Prune(stCtx(), agentmem.PruneObservationsOlderThan(150*time.Second, 8))
	if err != nil {
		t.Fatal(err)
	}
	if comp.Changed() {
		t.Fatalf("second prune changed %+v", comp)
	}
}

func TestTokenBudget(t *testing.T) {
	steps := stList("S T A P A N A M A U A")
	// The summary (U) is not pinned here, so that only the head is.
	env := agentmem.NewEnv(agentmem.EnvOptions{Now: stNow, Counter: stWords{}, Pinning: &agentmem.Pinning{SystemPrompts: true, FirstTask: true}})
	pinnedCost := agentmem.ReplyPriming + env.Tokens(steps[0]) + env.Tokens(steps[1])
	total := agentmem.ReplyPriming
	for _, s := range steps {
		total += env.Tokens(s)
	}
	for budget := pinnedCost; budget <= total+5; budget++ {
		out := stApply(t, agentmem.TokenBudget(budget), steps, env)
		used := agentmem.ReplyPriming
		for _, s := range out {
			used += env.Tokens(s)
		}
		if used > budget {
			t.Fatalf("budget %d: kept steps cost %d", budget, used)
		}
		nums := stNums(out)
		if len(nums) < 2 || nums[0] != 0 || nums[1] != 1 {
			t.Fatalf("budget %d: pinned steps not kept: %v", budget, nums)
		}
		// No gaps: the unpinned steps kept are the newest ones, and the
		// next older one would not have fit.
		first := len(steps) - (len(nums) - 2)
		if want := append([]int{0, 1}, stNums(steps[first:])...); !slices.Equal(nums, want) {
			t.Fatalf("budget %d: kept %v, want %v", budget, nums, want)
		}
		if first > 2 && used+env.Tokens(steps[first-1]) <= budget {
			t.Fatalf("budget %d: step %d would have fit", budget, first-1)
		}
	}
	// The same choice as Memory.Context makes when it does not truncate
	// an oversized newest step (which TokenBudget, choosing steps whole,
	// drops).
	m, _ := stSeeded(t, 8)
	for _, budget := range []int{40, 80, 120, 500} {
		c, err := m.Context(stCtx(), agentmem.ContextOptions{Budget: budget, DropOversizedNewest: true})
		if err != nil {
			t.Fatal(err)
		}
		fresh, _ := stSeeded(t, 8)
		comp, err := fresh.Prune(stCtx(), agentmem.TokenBudget(budget))
		if err != nil {
			t.Fatal(err)
		}
		kept := comp.Before - len(comp.Removed)
		if kept != len(c.Steps) {
			t.Fatalf("budget %d: TokenBudget kept %d steps, Context shows %d", budget, kept, len(c.Steps))
		}
	}
	// Zero keeps everything.
	stWantNums(t, "TokenBudget(0)", stApply(t, agentmem.TokenBudget(0), steps, env), stNums(steps)...)
}

func TestTokenBudgetTooSmall(t *testing.T) {
	steps := stList("S T A")
	env := stEnv()
	need := agentmem.ReplyPriming + env.Tokens(steps[0]) + env.Tokens(steps[1])
	_, err := agentmem.TokenBudget(need-1).Apply(stCtx(), steps, env)
	var be *agentmem.BudgetError
	if !errors.As(err, &be) || !errors.Is(err, agentmem.ErrBudgetTooSmall) {
		t.Fatalf("err = %v, want a *BudgetError", err)
	}
	if be.Budget != need-1 || be.Required != need {
		t.Fatalf("BudgetError = %+v, want budget %d required %d", be, need-1, need)
	}
	stWantNums(t, "TokenBudget(need)", stApply(t, agentmem.TokenBudget(need), steps, env), 0, 1)

	// Through Prune the error leaves the memory as it was.
	m, _ := stSeeded(t, 3)
	if _, err := m.Prune(stCtx(), agentmem.TokenBudget(3)); !errors.Is(err, agentmem.ErrBudgetTooSmall) {
		t.Fatalf("Prune err = %v", err)
	}
	if m.Len() != 5 {
		t.Fatalf("a failed prune changed the memory: %d steps", m.Len())
	}
}

// stRecorder is a Summarizer that records its requests and answers with
// the texts it is given in turn (the last one repeated), or fails.
type stRecorder struct {
	answers []string
	err     error
	reqs    []agentmem.SummaryRequest
}

func (r *stRecorder) Summarize(_ context.Context, req agentmem.SummaryRequest) (string, error) {
	r.reqs = append(r.reqs, req)
	if r.err != nil {
		return "", r.err
	}
	if len(r.answers) == 0 {
		return fmt.Sprintf("summary of %d steps", len(req.Steps)), nil
	}
	a := r.answers[0]
	if len(r.answers) > 1 {
		r.answers = r.answers[1:]
	}
	return a, nil
}

// stEmbedder embeds a text as the counts of a few marker words.
type stEmbedder struct{ calls [][]string }

func (e *stEmbedder) EmbeddingModel() string { return "marker-words-1" }

func (e *stEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.calls = append(e.calls, slices.Clone(texts))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		for _, w := range []string{"alpha", "beta", "gamma", "delta"} {
			out[i] = append(out[i], float32(strings.Count(t, w)))
		}
	}
	return out, nil
}

func TestStrategiesDoNotModifyTheirInput(t *testing.T) {
	long := strings.Repeat("observation words ", 30)
	for name, s := range map[string]agentmem.Strategy{
		"KeepLastN":                  agentmem.KeepLastN(2),
		"KeepLastNActions":           agentmem.KeepLastNActions(1),
		"KeepSystemAndRecent":        agentmem.KeepSystemAndRecent(2),
		"DropKinds":                  agentmem.DropKinds(agentmem.KindScratchpad),
		"PruneOldObservations":       agentmem.PruneOldObservations(1, 5),
		"PruneObservationsOlderThan": agentmem.PruneObservationsOlderThan(time.Second, 5),
		"TokenBudget":                agentmem.TokenBudget(120),
		"Summarize":                  agentmem.Summarize(&stRecorder{}, agentmem.SummarizeOptions{KeepRecent: 2}),
		"MMR lexical":                agentmem.MMR(agentmem.MMROptions{KeepRecent: 1, Keep: 2}),
		"MMR embedder":               agentmem.MMR(agentmem.MMROptions{KeepRecent: 1, Keep: 2, Embedder: &stEmbedder{}}),
		"Chain":                      agentmem.Chain(agentmem.PruneOldObservations(1, 5), agentmem.KeepLastN(3)),
	} {
		steps := stList("S T A N A U A P A M A")
		for _, st := range steps {
			if a, ok := st.(*agentmem.ActionStep); ok {
				a.Results[0].Content = long
				a.Observation = long
				a.Metadata = map[string]string{"k": "v"}
			}
		}
		given := slices.Clone(steps)
		copies := make([]agentmem.Step, len(steps))
		for i, st := range steps {
			copies[i] = agentmem.CloneStep(st)
		}
		out, err := s.Apply(stCtx(), steps, stEnv())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(out) == len(steps) && name != "PruneOldObservations" && name != "PruneObservationsOlderThan" {
			t.Errorf("%s dropped nothing: the test does not exercise it", name)
		}
		for i := range steps {
			if steps[i] != given[i] {
				t.Fatalf("%s changed the input slice at %d", name, i)
			}
			if !reflect.DeepEqual(steps[i], copies[i]) {
				t.Fatalf("%s modified step %d:\n got %+v\nwant %+v", name, i, steps[i], copies[i])
			}
		}
	}
}

func TestPruneReportsCompaction(t *testing.T) {
	m, _ := stSeeded(t, 6) // 0 system, 1 task, 2..7 actions
	before := m.Steps()
	comp, err := m.Prune(stCtx(), agentmem.KeepLastN(2))
	if err != nil {
		t.Fatal(err)
	}
	if got := stNums(comp.Removed); !slices.Equal(got, []int{2, 3, 4, 5}) {
		t.Fatalf("removed %v", got)
	}
	if len(comp.Replaced) != 0 || len(comp.Added) != 0 || comp.Before != 8 || comp.After != 4 {
		t.Fatalf("compaction = %+v", comp)
	}
	for i, r := range comp.Removed {
		if !reflect.DeepEqual(r, before[i+2]) {
			t.Fatalf("removed step %d differs from the original", r.Info().Number)
		}
	}
	stWantNums(t, "working set", m.Steps(), 0, 1, 6, 7)
	// Numbers go on from where they were.
	if m.NextNumber() != 8 {
		t.Fatalf("next number %d", m.NextNumber())
	}
}

func TestChainThroughPrune(t *testing.T) {
	clock := stNow
	m := stMem(&clock)
	long := strings.Repeat("w ", 40)
	stAdd(t, m,
		&agentmem.SystemPromptStep{Content: "sys"}, // 0
		&agentmem.TaskStep{Task: "task"},           // 1
		stAction(0, long),                          // 2
		&agentmem.ScratchpadStep{Content: "note"},  // 3
		stAction(1, long),                          // 4
		stAction(2, long),                          // 5
		&agentmem.ScratchpadStep{Content: "note"},  // 6
		stAction(3, long),                          // 7
	)
	comp, err := m.Prune(stCtx(), agentmem.Chain(
		agentmem.DropKinds(agentmem.KindScratchpad),
		agentmem.PruneOldObservations(1, 6),
		agentmem.KeepLastN(3),
	))
	if err != nil {
		t.Fatal(err)
	}
	stWantNums(t, "working set", m.Steps(), 0, 1, 4, 5, 7)
	if got := stNums(comp.Removed); !slices.Equal(got, []int{2, 3, 6}) {
		t.Fatalf("removed %v", got)
	}
	if got := stNums(comp.Replaced); !slices.Equal(got, []int{4, 5}) {
		t.Fatalf("replaced %v", got)
	}
	for _, s := range m.Steps() {
		if a, ok := s.(*agentmem.ActionStep); ok {
			if truncated := a.Results[0].Content != long; truncated != (a.Number != 7) {
				t.Fatalf("step %d truncated = %v", a.Number, truncated)
			}
			if a.ID == "" {
				t.Fatalf("step %d lost its ID", a.Number)
			}
		}
	}
}

func TestPinnedStepsSurviveModifiedCopiesInAChain(t *testing.T) {
	m, _ := stSeeded(t, 4)
	// A custom strategy that rewrites the task (a copy, same number and ID).
	rewriteTask := agentmem.StrategyFunc(func(_ context.Context, steps []agentmem.Step, _ *agentmem.Env) ([]agentmem.Step, error) {
		out := slices.Clone(steps)
		for i, s := range out {
			if task, ok := s.(*agentmem.TaskStep); ok {
				c := agentmem.CloneStep(task).(*agentmem.TaskStep)
				c.Task = "fix the bug (rephrased)"
				out[i] = c
			}
		}
		return out, nil
	})
	if _, err := m.Prune(stCtx(), agentmem.Chain(rewriteTask, agentmem.KeepLastN(1))); err != nil {
		t.Fatal(err)
	}
	stWantNums(t, "working set", m.Steps(), 0, 1, 5)
}

func ExampleKeepLastN() {
	m := agentmem.New(agentmem.Options{})
	ctx := context.Background()
	_, _ = m.Add(ctx, &agentmem.SystemPromptStep{Content: "You are a coding agent."})
	_, _ = m.Add(ctx, &agentmem.TaskStep{Task: "Find the failing test."})
	for i := range 5 {
		id := fmt.Sprintf("call_%d", i)
		_, _ = m.Add(ctx, &agentmem.ActionStep{
			ToolCalls: []agentmem.ToolCall{{ID: id, Name: "run_tests", Arguments: "{}"}},
			Results:   []agentmem.ToolResult{{CallID: id, Content: strings.Repeat("FAIL: TestParse ", 20)}},
		})
	}

	// Keep the newest three steps, and cut the output of all but the
	// newest action to 16 bytes.
	comp, err := m.Prune(ctx, agentmem.Chain(
		agentmem.KeepLastN(3),
		agentmem.PruneOldObservations(1, 16),
	))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("removed:", len(comp.Removed), "truncated:", len(comp.Replaced))
	for _, s := range m.Steps() {
		line := fmt.Sprintf("#%d %s", s.Info().Number, s.Kind())
		if a, ok := s.(*agentmem.ActionStep); ok {
			line += fmt.Sprintf(" (%d bytes of output)", a.ObservationLen())
		}
		fmt.Println(line)
	}
	// Output:
	// removed: 2 truncated: 2
	// #0 system_prompt
	// #1 task
	// #4 action (41 bytes of output)
	// #5 action (41 bytes of output)
	// #6 action (320 bytes of output)
}
