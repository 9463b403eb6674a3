package agentmem_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
)

// stObs returns an action step whose tool result is text.
func stObs(n int, text string) agentmem.Step {
	a := stAction(n, text)
	a.ModelOutput = ""
	a.StepInfo = agentmem.StepInfo{Number: n, ID: fmt.Sprintf("s%d", n)}
	return a
}

// stRedundantHistory is a run whose older steps are five near-duplicate
// observations (steps 2..6, the retries of one failing call) and two
// distinct ones relevant to the task (steps 7 and 8), then one recent step.
func stRedundantHistory() []agentmem.Step {
	steps := []agentmem.Step{
		&agentmem.SystemPromptStep{StepInfo: agentmem.StepInfo{Number: 0, ID: "s0"}, Content: "You are an ops agent."},
		&agentmem.TaskStep{StepInfo: agentmem.StepInfo{Number: 1, ID: "s1"}, Task: "Why does the database connection time out?"},
	}
	for i, n := range []string{"one", "two", "three", "four", "five"} {
		steps = append(steps, stObs(2+i, "error: database connection timeout after 30s (attempt "+n+")"))
	}
	steps = append(steps,
		stObs(7, "pool.yaml sets max_connections to 5 while 40 workers share the database"),
		stObs(8, "firewall log: port 5432 drops packets from the workers subnet, so the connection hangs until timeout"),
		stObs(9, "checking the connection settings next"),
	)
	return steps
}

func TestMMRPrefersDiverseSteps(t *testing.T) {
	steps := stRedundantHistory()
	out := stApply(t, agentmem.MMR(agentmem.MMROptions{KeepRecent: 1, Keep: 3}), steps, stEnv())
	// One of the duplicates (the newest: equal scores go to newer steps)
	// and both distinct findings; the pinned and the recent step stay.
	stWantNums(t, "MMR", out, 0, 1, 6, 7, 8, 9)

	// Relevance alone spends two of the three places on duplicates (the
	// newest two: they tie) and loses the pool finding.
	out = stApply(t, agentmem.MMR(agentmem.MMROptions{KeepRecent: 1, Keep: 3, Lambda: 1}), steps, stEnv())
	stWantNums(t, "relevance only", out, 0, 1, 5, 6, 8, 9)
}

func TestMMRBudget(t *testing.T) {
	steps := stRedundantHistory()
	env := stEnv()
	for budget := 1; budget <= 200; budget += 7 {
		out := stApply(t, agentmem.MMR(agentmem.MMROptions{KeepRecent: 1, Budget: budget}), steps, env)
		used := 0
		for _, s := range out {
			if n := s.Info().Number; n >= 2 && n <= 8 {
				used += env.Tokens(s)
			}
		}
		if used > budget {
			t.Fatalf("budget %d: selected steps cost %d", budget, used)
		}
		nums := stNums(out)
		if !slices.IsSorted(nums) || nums[0] != 0 || nums[1] != 1 || nums[len(nums)-1] != 9 {
			t.Fatalf("budget %d: kept %v", budget, nums)
		}
	}
	// Room for three duplicates' worth: the diverse choice again.
	cost := env.Tokens(steps[6])
	out := stApply(t, agentmem.MMR(agentmem.MMROptions{KeepRecent: 1, Budget: env.Tokens(steps[6]) + env.Tokens(steps[7]) + env.Tokens(steps[8])}), steps, env)
	stWantNums(t, fmt.Sprintf("budget of three steps (%d tokens each)", cost), out, 0, 1, 6, 7, 8, 9)
}

func TestMMRKeepsEverythingThatFits(t *testing.T) {
	steps := stRedundantHistory()
	emb := &stEmbedder{}
	out := stApply(t, agentmem.MMR(agentmem.MMROptions{KeepRecent: 2, Keep: 6, Embedder: emb}), steps, stEnv())
	stWantNums(t, "MMR with room for all", out, stNums(steps)...)
	if len(emb.calls) != 0 {
		t.Fatal("the embedder was called with nothing to choose")
	}
	// KeepRecent covers everything: nothing to choose either.
	out = stApply(t, agentmem.MMR(agentmem.MMROptions{KeepRecent: 20, Keep: 1}), steps, stEnv())
	stWantNums(t, "MMR KeepRecent 20", out, stNums(steps)...)
}

func TestMMRDefaultKeepRecentAndTies(t *testing.T) {
	steps := []agentmem.Step{&agentmem.TaskStep{StepInfo: agentmem.StepInfo{Number: 0}, Task: "t"}}
	for i := 1; i <= 10; i++ {
		steps = append(steps, stObs(i, "the same observation"))
	}
	// Default KeepRecent is 6 (steps 5..10); of four identical older steps
	// the newest is kept.
	out := stApply(t, agentmem.MMR(agentmem.MMROptions{Keep: 1}), steps, stEnv())
	stWantNums(t, "ties", out, 0, 4, 5, 6, 7, 8, 9, 10)
	out = stApply(t, agentmem.MMR(agentmem.MMROptions{Keep: 2, KeepRecent: -1}), steps, stEnv())
	stWantNums(t, "ties, no recent", out, 0, 9, 10)
}

func TestMMRQueryOption(t *testing.T) {
	steps := stRedundantHistory()
	out := stApply(t, agentmem.MMR(agentmem.MMROptions{KeepRecent: 1, Keep: 1, Query: "firewall packets port"}), steps, stEnv())
	stWantNums(t, "query firewall", out, 0, 1, 8, 9)
	out = stApply(t, agentmem.MMR(agentmem.MMROptions{KeepRecent: 1, Keep: 1, Query: "max_connections workers pool"}), steps, stEnv())
	stWantNums(t, "query pool", out, 0, 1, 7, 9)
}

func TestMMREmbedder(t *testing.T) {
	texts := []string{"alpha alpha", "alpha alpha", "alpha beta", "gamma", "delta gamma", "beta"}
	steps := []agentmem.Step{&agentmem.TaskStep{StepInfo: agentmem.StepInfo{Number: 0}, Task: "alpha gamma"}}
	for i, tx := range texts {
		steps = append(steps, stObs(i+1, tx))
	}
	emb := &stEmbedder{}
	out := stApply(t, agentmem.MMR(agentmem.MMROptions{KeepRecent: -1, Keep: 2, Embedder: emb}), steps, stEnv())
	// Step 2 ("alpha alpha") and step 4 ("gamma") match the query best and
	// differ from each other; step 1 duplicates step 2.
	stWantNums(t, "embedder", out, 0, 2, 4)
	if len(emb.calls) != 1 || len(emb.calls[0]) != len(texts)+1 || !strings.Contains(emb.calls[0][len(texts)], "alpha gamma") {
		t.Fatalf("embedder calls %q", emb.calls)
	}

	boom := errors.New("embedding service down")
	failing := embedFunc(func(context.Context, []string) ([][]float32, error) { return nil, boom })
	if _, err := agentmem.MMR(agentmem.MMROptions{KeepRecent: -1, Keep: 2, Embedder: failing}).Apply(stCtx(), steps, stEnv()); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	short := embedFunc(func(_ context.Context, in []string) ([][]float32, error) { return make([][]float32, len(in)-1), nil })
	if _, err := agentmem.MMR(agentmem.MMROptions{KeepRecent: -1, Keep: 2, Embedder: short}).Apply(stCtx(), steps, stEnv()); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("too few vectors: err = %v", err)
	}
}

type embedFunc func(context.Context, []string) ([][]float32, error)

func (f embedFunc) Embed(ctx context.Context, in []string) ([][]float32, error) { return f(ctx, in) }
func (f embedFunc) EmbeddingModel() string                                      { return "func-1" }

func TestMMRNeedsBudgetOrKeep(t *testing.T) {
	if _, err := agentmem.MMR(agentmem.MMROptions{}).Apply(stCtx(), stRedundantHistory(), stEnv()); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
}

func TestMMRThroughPrune(t *testing.T) {
	clock := stNow
	m := stMem(&clock)
	for _, s := range stRedundantHistory() {
		c := agentmem.CloneStep(s)
		stSetInfo(c, agentmem.StepInfo{})
		stAdd(t, m, c)
	}
	comp, err := m.Prune(stCtx(), agentmem.MMR(agentmem.MMROptions{KeepRecent: 1, Keep: 3}))
	if err != nil {
		t.Fatal(err)
	}
	if got := stNums(comp.Removed); !slices.Equal(got, []int{2, 3, 4, 5}) || len(comp.Replaced)+len(comp.Added) != 0 {
		t.Fatalf("removed %v, compaction %+v", got, comp)
	}
	stWantNums(t, "working set", m.Steps(), 0, 1, 6, 7, 8, 9)
}

func ExampleMMR() {
	m := agentmem.New(agentmem.Options{})
	ctx := context.Background()
	_, _ = m.Add(ctx, &agentmem.SystemPromptStep{Content: "You are an ops agent."})
	_, _ = m.Add(ctx, &agentmem.TaskStep{Task: "Why does the database connection time out?"})
	observe := func(text string) {
		id := agentmem.NewID()
		_, _ = m.Add(ctx, &agentmem.ActionStep{
			ToolCalls: []agentmem.ToolCall{{ID: id, Name: "shell", Arguments: "{}"}},
			Results:   []agentmem.ToolResult{{CallID: id, Content: text}},
		})
	}
	for i := range 4 {
		observe(fmt.Sprintf("error: database connection timeout after 30s (attempt %d)", i+1))
	}
	observe("pool.yaml sets max_connections to 5 while 40 workers share the database")
	observe("firewall log: port 5432 drops packets from the workers subnet")
	observe("checking the connection settings next")

	// Keep the newest step and the three older steps that tell the most.
	if _, err := m.Prune(ctx, agentmem.MMR(agentmem.MMROptions{KeepRecent: 1, Keep: 3})); err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range m.Steps() {
		if a, ok := s.(*agentmem.ActionStep); ok {
			fmt.Println(a.Results[0].Content)
		}
	}
	// Output:
	// error: database connection timeout after 30s (attempt 4)
	// pool.yaml sets max_connections to 5 while 40 workers share the database
	// firewall log: port 5432 drops packets from the workers subnet
	// checking the connection settings next
}
