package agentmem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/tokenizer"
)

var bg = context.Background()

// words counts one token per space-separated word: easy to reason about.
type words struct{}

func (words) Name() string { return "words" }
func (words) Count(s string) int {
	return len(strings.Fields(s))
}

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

func newMem(t *testing.T) *agentmem.Memory {
	t.Helper()
	n := 0
	return agentmem.New(agentmem.Options{
		Counter: words{},
		Clock:   fixedClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		NewID:   func() string { n++; return fmt.Sprintf("id-%d", n) },
	})
}

func action(i int, obs string) *agentmem.ActionStep {
	id := fmt.Sprintf("call_%d", i)
	return &agentmem.ActionStep{
		ModelOutput: fmt.Sprintf("thinking about %d", i),
		ToolCalls:   []agentmem.ToolCall{{ID: id, Name: "read_file", Arguments: `{"path":"a.go"}`}},
		Results:     []agentmem.ToolResult{{CallID: id, Content: obs}},
	}
}

func mustAdd(t *testing.T, m *agentmem.Memory, s agentmem.Step) agentmem.StepInfo {
	t.Helper()
	info, err := m.Add(bg, s)
	if err != nil {
		t.Fatalf("Add(%T): %v", s, err)
	}
	return info
}

func seeded(t *testing.T, actions int) *agentmem.Memory {
	t.Helper()
	m := newMem(t)
	mustAdd(t, m, &agentmem.SystemPromptStep{Content: "you are helpful"})
	mustAdd(t, m, &agentmem.TaskStep{Task: "fix the bug"})
	for i := range actions {
		mustAdd(t, m, action(i, "observation text number "+fmt.Sprint(i)))
	}
	return m
}

func TestAddAssignsNumbersIDsAndTimes(t *testing.T) {
	m := newMem(t)
	a := mustAdd(t, m, &agentmem.SystemPromptStep{StepInfo: agentmem.StepInfo{Number: 99}, Content: "sys"})
	b := mustAdd(t, m, &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "mine"}, Task: "t"})
	if a.Number != 0 || b.Number != 1 {
		t.Fatalf("numbers = %d, %d; want 0, 1 (numbers set by the caller are ignored)", a.Number, b.Number)
	}
	if a.ID != "id-1" || b.ID != "mine" {
		t.Fatalf("ids = %q, %q", a.ID, b.ID)
	}
	if !a.Time.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Fatalf("time = %v, want the injected clock", a.Time)
	}
}

func TestAddCopiesTheStep(t *testing.T) {
	m := newMem(t)
	s := action(0, "original")
	mustAdd(t, m, s)
	s.Results[0].Content = "mutated by caller"
	got := agentmem.StepsOf[*agentmem.ActionStep](m)[0]
	if got.Results[0].Content != "original" {
		t.Fatalf("stored step changed with the caller's copy: %q", got.Results[0].Content)
	}
	got.Results[0].Content = "mutated reader copy"
	if again := agentmem.StepsOf[*agentmem.ActionStep](m)[0]; again.Results[0].Content != "original" {
		t.Fatalf("stored step changed with a reader's copy: %q", again.Results[0].Content)
	}
}

func TestAddRefusesInvalidSteps(t *testing.T) {
	cases := map[string]agentmem.Step{
		"nil":             nil,
		"orphan result":   &agentmem.ActionStep{Results: []agentmem.ToolResult{{CallID: "x", Content: "r"}}},
		"call no id":      &agentmem.ActionStep{ToolCalls: []agentmem.ToolCall{{Name: "f"}}},
		"duplicate call":  &agentmem.ActionStep{ToolCalls: []agentmem.ToolCall{{ID: "a", Name: "f"}, {ID: "a", Name: "g"}}, Results: []agentmem.ToolResult{{CallID: "a"}}},
		"two results":     &agentmem.ActionStep{ToolCalls: []agentmem.ToolCall{{ID: "a", Name: "f"}}, Results: []agentmem.ToolResult{{CallID: "a"}, {CallID: "a"}}},
		"invalid utf8":    &agentmem.TaskStep{Task: "bad \xff byte"},
		"tool in message": &agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleTool, ToolCallID: "a"}},
		"bad role":        &agentmem.MessageStep{Message: agentmem.Message{Role: "wizard"}},
		"bad range":       &agentmem.SummaryStep{Summary: "s", Covers: []agentmem.Range{{From: 5, To: 2}}},
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			m := newMem(t)
			_, err := m.Add(bg, s)
			if !errors.Is(err, agentmem.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if m.Len() != 0 || m.NextNumber() != 0 {
				t.Fatalf("a refused add changed the memory: len %d next %d", m.Len(), m.NextNumber())
			}
		})
	}
}

func TestStepsOfAndActionCount(t *testing.T) {
	m := seeded(t, 3)
	mustAdd(t, m, &agentmem.ScratchpadStep{Content: "note"})
	if n := m.ActionCount(); n != 3 {
		t.Fatalf("ActionCount = %d", n)
	}
	if got := agentmem.StepsOf[*agentmem.ScratchpadStep](m); len(got) != 1 || got[0].Content != "note" {
		t.Fatalf("StepsOf scratchpad = %+v", got)
	}
	if err := m.Clear(bg); err != nil {
		t.Fatal(err)
	}
	if m.Len() != 0 || m.ActionCount() != 0 {
		t.Fatal("Clear left steps")
	}
	if info := mustAdd(t, m, &agentmem.TaskStep{Task: "again"}); info.Number != 6 {
		t.Fatalf("number after Clear = %d, want 6 (never reused)", info.Number)
	}
}

func TestContextKeepsPinnedAndNewest(t *testing.T) {
	m := seeded(t, 10)
	full, err := m.Context(bg, agentmem.ContextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if full.DroppedSteps != 0 || len(full.Steps) != 12 {
		t.Fatalf("unbudgeted context dropped steps: %+v", full.Steps)
	}
	// Each action costs: assistant (4+3 words + call 3+1+1) + tool (4+4
	// words; OpenAI's tool messages carry no name) = 20.
	sysTask := agentmem.ReplyPriming + (4 + 3) + (4 + 3)
	budget := sysTask + 3*20 + 5
	c, err := m.Context(bg, agentmem.ContextOptions{Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	want := []int{0, 1, 9, 10, 11}
	if fmt.Sprint(c.Steps) != fmt.Sprint(want) {
		t.Fatalf("steps = %v, want %v", c.Steps, want)
	}
	if c.Tokens != sysTask+3*20 || c.Tokens > budget {
		t.Fatalf("tokens = %d, want %d (budget %d)", c.Tokens, sysTask+3*20, budget)
	}
	if c.Tokens != agentmem.RequestTokens(words{}, c.Messages) {
		t.Fatalf("reported tokens %d != recount %d", c.Tokens, agentmem.RequestTokens(words{}, c.Messages))
	}
	if c.DroppedSteps != 7 || len(c.Dropped) != 1 || c.Dropped[0] != (agentmem.DroppedRun{First: 2, Last: 8, Count: 7}) {
		t.Fatalf("dropped = %+v (%d)", c.Dropped, c.DroppedSteps)
	}
	if c.Messages[0].Role != agentmem.RoleSystem || c.Messages[1].Text() != "fix the bug" {
		t.Fatalf("pinned messages missing: %+v", c.Messages[:2])
	}
	// The view did not change the memory.
	if m.Len() != 12 {
		t.Fatalf("Context changed the working set: %d", m.Len())
	}
}

func TestContextBudgetTooSmall(t *testing.T) {
	m := seeded(t, 2)
	_, err := m.Context(bg, agentmem.ContextOptions{Budget: 5})
	var be *agentmem.BudgetError
	if !errors.Is(err, agentmem.ErrBudgetTooSmall) || !errors.As(err, &be) {
		t.Fatalf("err = %v, want a BudgetError", err)
	}
	if be.Budget != 5 || be.Required != agentmem.ReplyPriming+14 {
		t.Fatalf("BudgetError = %+v", be)
	}
}

func TestContextTruncateToFill(t *testing.T) {
	m := newMem(t)
	mustAdd(t, m, &agentmem.TaskStep{Task: "task"})
	long := strings.Repeat("word ", 200)
	mustAdd(t, m, action(0, long))
	mustAdd(t, m, action(1, "short result"))
	budget := 80
	plain, err := m.Context(bg, agentmem.ContextOptions{Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(plain.Steps) != "[0 2]" {
		t.Fatalf("plain steps = %v", plain.Steps)
	}
	filled, err := m.Context(bg, agentmem.ContextOptions{Budget: budget, TruncateToFill: true})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(filled.Steps) != "[0 1 2]" || fmt.Sprint(filled.Truncated) != "[1]" {
		t.Fatalf("filled steps = %v truncated = %v", filled.Steps, filled.Truncated)
	}
	if filled.Tokens > budget || filled.Tokens <= plain.Tokens {
		t.Fatalf("filled tokens %d (plain %d, budget %d)", filled.Tokens, plain.Tokens, budget)
	}
	if filled.Tokens != agentmem.RequestTokens(words{}, filled.Messages) {
		t.Fatalf("reported %d != recount %d", filled.Tokens, agentmem.RequestTokens(words{}, filled.Messages))
	}
	var tool agentmem.Message
	for _, msg := range filled.Messages {
		if msg.Role == agentmem.RoleTool {
			tool = msg
			break
		}
	}
	if !strings.Contains(tool.Text(), "truncated") || len(tool.Text()) >= len(long) {
		t.Fatalf("truncated observation = %q", tool.Text())
	}
}

func TestContextMessagesAreCopies(t *testing.T) {
	m := seeded(t, 1)
	c, err := m.Context(bg, agentmem.ContextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Messages[2].Content[0].Text = "changed"
	c.Messages[2].ToolCalls[0].Name = "changed"
	again, _ := m.Context(bg, agentmem.ContextOptions{})
	if again.Messages[2].Content[0].Text == "changed" || again.Messages[2].ToolCalls[0].Name == "changed" {
		t.Fatal("modifying a returned context changed the memory's cache")
	}
}

func TestTrimToFitMutatesAndReports(t *testing.T) {
	var seen []*agentmem.Compaction
	m := agentmem.New(agentmem.Options{Counter: words{}, OnCompact: func(c *agentmem.Compaction, err error) {
		if err != nil {
			t.Errorf("OnCompact error: %v", err)
		}
		seen = append(seen, c)
	}})
	mustAdd(t, m, &agentmem.SystemPromptStep{Content: "sys"})
	mustAdd(t, m, &agentmem.TaskStep{Task: "task"})
	for i := range 6 {
		mustAdd(t, m, action(i, "obs"))
	}
	view, err := m.Context(bg, agentmem.ContextOptions{Budget: 60})
	if err != nil {
		t.Fatal(err)
	}
	comp, err := m.TrimToFit(bg, agentmem.ContextOptions{Budget: 60})
	if err != nil {
		t.Fatal(err)
	}
	if len(comp.Removed) != view.DroppedSteps || comp.After != len(view.Steps) || comp.Before != 8 {
		t.Fatalf("compaction %+v vs view %+v", comp, view)
	}
	if len(seen) != 1 || seen[0] != comp {
		t.Fatalf("OnCompact saw %v", seen)
	}
	var nums []int
	for _, s := range m.Steps() {
		nums = append(nums, s.Info().Number)
	}
	if fmt.Sprint(nums) != fmt.Sprint(view.Steps) {
		t.Fatalf("working set %v, want %v", nums, view.Steps)
	}
	if comp.Removed[0].Info().Number != 2 {
		t.Fatalf("removed starts at %d", comp.Removed[0].Info().Number)
	}
}

func TestPruneValidatesStrategyOutput(t *testing.T) {
	m := seeded(t, 3)
	repeat := agentmem.StrategyFunc(func(_ context.Context, s []agentmem.Step, _ *agentmem.Env) ([]agentmem.Step, error) {
		return []agentmem.Step{s[0], s[1], s[1]}, nil
	})
	reorderInsert := agentmem.StrategyFunc(func(_ context.Context, s []agentmem.Step, _ *agentmem.Env) ([]agentmem.Step, error) {
		return []agentmem.Step{s[1], &agentmem.SummaryStep{Summary: "x"}, s[0]}, nil
	})
	forged := agentmem.StrategyFunc(func(_ context.Context, s []agentmem.Step, _ *agentmem.Env) ([]agentmem.Step, error) {
		return []agentmem.Step{&agentmem.TaskStep{StepInfo: agentmem.StepInfo{Number: 77, ID: "forged"}, Task: "x"}}, nil
	})
	failing := agentmem.StrategyFunc(func(context.Context, []agentmem.Step, *agentmem.Env) ([]agentmem.Step, error) {
		return nil, errors.New("boom")
	})
	for name, s := range map[string]agentmem.Strategy{"repeat": repeat, "reorder and insert": reorderInsert, "forged": forged, "failing": failing} {
		_, err := m.Prune(bg, s)
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		var se *agentmem.StrategyError
		if name != "failing" && (!errors.As(err, &se) || !errors.Is(err, agentmem.ErrInvalid)) {
			t.Fatalf("%s: error %v is not a *StrategyError wrapping ErrInvalid", name, err)
		}
		if _, err := m.Context(bg, agentmem.ContextOptions{Strategy: s}); err == nil {
			t.Fatalf("%s: Context with the strategy: no error", name)
		}
		if m.Len() != 5 {
			t.Fatalf("%s: failed prune changed the memory", name)
		}
	}
}

func TestPruneKeepsStepsAppendedMeanwhile(t *testing.T) {
	m := seeded(t, 4)
	started, release := make(chan struct{}), make(chan struct{})
	slow := agentmem.StrategyFunc(func(_ context.Context, s []agentmem.Step, _ *agentmem.Env) ([]agentmem.Step, error) {
		close(started)
		<-release
		return s[:2], nil // keep system and task only
	})
	done := make(chan error)
	go func() { _, err := m.Prune(bg, slow); done <- err }()
	<-started
	appended := mustAdd(t, m, action(99, "arrived during the prune"))
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var nums []int
	for _, s := range m.Steps() {
		nums = append(nums, s.Info().Number)
	}
	if fmt.Sprint(nums) != fmt.Sprint([]int{0, 1, appended.Number}) {
		t.Fatalf("working set = %v; the step appended during the prune must survive", nums)
	}
}

func TestPruneConflict(t *testing.T) {
	m := seeded(t, 4)
	started, release := make(chan struct{}), make(chan struct{})
	slow := agentmem.StrategyFunc(func(_ context.Context, s []agentmem.Step, _ *agentmem.Env) ([]agentmem.Step, error) {
		close(started)
		<-release
		return s[:3], nil
	})
	done := make(chan error)
	go func() { _, err := m.Prune(bg, slow); done <- err }()
	<-started
	if _, err := m.TrimToFit(bg, agentmem.ContextOptions{Budget: 40}); err != nil {
		t.Fatal(err)
	}
	after := m.Len()
	close(release)
	if err := <-done; !errors.Is(err, agentmem.ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	if m.Len() != after {
		t.Fatal("the conflicting prune changed the memory")
	}
}

func TestSetSummary(t *testing.T) {
	m := seeded(t, 6)
	comp, err := m.SetSummary(bg, "did six things", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(comp.Removed) != 4 || len(comp.Added) != 1 {
		t.Fatalf("compaction = %+v", comp)
	}
	sum := comp.Added[0].(*agentmem.SummaryStep)
	if sum.Number != 8 || fmt.Sprint(sum.Covers) != "[{2 5}]" {
		t.Fatalf("summary number %d covers %v", sum.Number, sum.Covers)
	}
	if m.Summary() != "did six things" {
		t.Fatalf("Summary() = %q", m.Summary())
	}
	var kinds []string
	for _, s := range m.Steps() {
		kinds = append(kinds, fmt.Sprintf("%s#%d", s.Kind(), s.Info().Number))
	}
	if got := strings.Join(kinds, " "); got != "system_prompt#0 task#1 summary#8 action#6 action#7" {
		t.Fatalf("working set = %s", got)
	}
	// A second summary covers the first one's range too.
	mustAdd(t, m, action(7, "x"))
	comp, err = m.SetSummary(bg, "did more", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := comp.Added[0].(*agentmem.SummaryStep).Covers; fmt.Sprint(got) != "[{2 7}]" {
		t.Fatalf("second summary covers %v", got)
	}
	snap := m.Snapshot()
	m2 := newMem(t)
	if err := m2.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if m2.Summary() != "did more" {
		t.Fatal("the summary did not survive snapshot and restore")
	}
}

func TestPolicyPrunesAutomatically(t *testing.T) {
	var comps int
	m := agentmem.New(agentmem.Options{
		Counter:   words{},
		Policy:    &agentmem.Policy{MaxSteps: 6, Strategy: keepLast(3)},
		OnCompact: func(*agentmem.Compaction, error) { comps++ },
	})
	mustAdd(t, m, &agentmem.TaskStep{Task: "task"})
	for i := range 10 {
		mustAdd(t, m, action(i, "o"))
		if m.Len() > 6 {
			t.Fatalf("policy did not hold: %d steps", m.Len())
		}
	}
	if comps == 0 {
		t.Fatal("no compaction reported")
	}
	tok := agentmem.New(agentmem.Options{Counter: words{}, Policy: &agentmem.Policy{MaxTokens: 100, Strategy: keepLast(1)}})
	mustAdd(t, tok, &agentmem.TaskStep{Task: "task"})
	for i := range 10 {
		mustAdd(t, tok, action(i, "o"))
		if n := tok.Tokens(); n > 100 {
			t.Fatalf("token policy did not hold: %d", n)
		}
	}
}

// keepLast keeps pinned steps and the newest n others (a local strategy so
// this file does not depend on the built-in ones).
func keepLast(n int) agentmem.Strategy {
	return agentmem.StrategyFunc(func(_ context.Context, steps []agentmem.Step, env *agentmem.Env) ([]agentmem.Step, error) {
		var out []agentmem.Step
		unpinned := 0
		for i := len(steps) - 1; i >= 0; i-- {
			if env.Pinned(steps[i]) || unpinned < n {
				if !env.Pinned(steps[i]) {
					unpinned++
				}
				out = append([]agentmem.Step{steps[i]}, out...)
			}
		}
		return out, nil
	})
}

func TestConcurrentUse(t *testing.T) {
	m := agentmem.New(agentmem.Options{Counter: tokenizer.NewHeuristic(), Policy: &agentmem.Policy{MaxSteps: 50, Strategy: keepLast(20)}})
	mustAdd(t, m, &agentmem.SystemPromptStep{Content: "sys"})
	mustAdd(t, m, &agentmem.TaskStep{Task: "task"})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if _, err := m.Add(bg, action(w*1000+i, "observation")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 200 {
				c, err := m.Context(bg, agentmem.ContextOptions{Budget: 300})
				if err != nil {
					t.Error(err)
					return
				}
				if c.Tokens > 300 || c.Messages[0].Role != agentmem.RoleSystem {
					t.Errorf("bad context under concurrency: %d tokens", c.Tokens)
					return
				}
				_ = m.Visualize()
			}
		}()
	}
	wg.Wait()
	if m.NextNumber() != 802 {
		t.Fatalf("next number %d, want 802", m.NextNumber())
	}
}

func TestVisualizeAndDump(t *testing.T) {
	m := seeded(t, 2)
	v := m.Visualize()
	for _, want := range []string{"Memory: 4 steps (2 actions)", "* #0", "system_prompt", "read_file", "obs 25 chars"} {
		if !strings.Contains(v, want) {
			t.Errorf("Visualize lacks %q:\n%s", want, v)
		}
	}
	var b strings.Builder
	if err := m.Dump(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "thinking about 1") {
		t.Errorf("Dump lacks content preview:\n%s", b.String())
	}
}

func TestTruncateTextIsIdempotent(t *testing.T) {
	s := strings.Repeat("abcdefghij", 5) // 50 bytes
	once := agentmem.TruncateText(s, 10)
	if once != "abcdefghij\n…[truncated 40 bytes]" {
		t.Fatalf("once = %q", once)
	}
	if twice := agentmem.TruncateText(once, 10); twice != once {
		t.Fatalf("truncating again changed it: %q", twice)
	}
	if shorter := agentmem.TruncateText(once, 4); shorter != "abcd\n…[truncated 46 bytes]" {
		t.Fatalf("cutting further = %q (must count every byte cut from the original)", shorter)
	}
	if utf := agentmem.TruncateText("ééé", 3); utf != "é\n…[truncated 4 bytes]" {
		t.Fatalf("cut inside a rune: %q", utf)
	}
}

func TestNoOpCompactionDoesNotConflict(t *testing.T) {
	m := seeded(t, 4)
	started, release := make(chan struct{}), make(chan struct{})
	slow := agentmem.StrategyFunc(func(_ context.Context, s []agentmem.Step, _ *agentmem.Env) ([]agentmem.Step, error) {
		close(started)
		<-release
		return s[:3], nil
	})
	done := make(chan error)
	go func() { _, err := m.Prune(bg, slow); done <- err }()
	<-started
	comp, err := m.Prune(bg, agentmem.NoPruning())
	if err != nil || comp.Changed() {
		t.Fatalf("no-op prune: %+v, %v", comp, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("a no-op compaction made the running prune fail: %v", err)
	}
	if m.Len() != 3 {
		t.Fatalf("len %d", m.Len())
	}
}

func TestPinsFollowModifiedCopies(t *testing.T) {
	m := seeded(t, 3)
	var pinnedAfterCopy bool
	rewrite := agentmem.StrategyFunc(func(_ context.Context, s []agentmem.Step, _ *agentmem.Env) ([]agentmem.Step, error) {
		task := agentmem.CloneStep(s[1]).(*agentmem.TaskStep)
		task.Task = "rewritten"
		return append([]agentmem.Step{s[0], task}, s[2:]...), nil
	})
	check := agentmem.StrategyFunc(func(_ context.Context, s []agentmem.Step, env *agentmem.Env) ([]agentmem.Step, error) {
		pinnedAfterCopy = env.Pinned(s[1])
		return s, nil
	})
	if _, err := m.Prune(bg, agentmem.Chain(rewrite, check)); err != nil {
		t.Fatal(err)
	}
	if !pinnedAfterCopy {
		t.Fatal("a modified copy of the pinned task lost its pin")
	}
	// Outside a memory the built-in strategies pin the first task.
	steps := m.Steps()
	out := agentmem.ReplaceWithSummary(steps, agentmem.NewEnv(agentmem.EnvOptions{}), "s", 0)
	if out[1].Kind() != agentmem.KindTask {
		t.Fatalf("ReplaceWithSummary with NewEnv summarized the task away: %v", out[1].Kind())
	}
}

func TestContextReuse(t *testing.T) {
	m := seeded(t, 30)
	opts := agentmem.ContextOptions{Budget: 200}
	fresh, err := m.Context(bg, opts)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(fresh)
	var prev *agentmem.Context
	for range 3 {
		opts.Reuse = prev
		c, err := m.Context(bg, opts)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := json.Marshal(c); string(got) != string(want) {
			t.Fatalf("reused render differs:\n%s\n%s", got, want)
		}
		prev = c
	}
	allocs := testing.AllocsPerRun(100, func() {
		opts.Reuse = prev
		prev, _ = m.Context(bg, opts)
	})
	if allocs > 0 {
		t.Fatalf("a steady render with Reuse allocates %.1f times", allocs)
	}
}

// TestStepEnds: the first and last steps of the working set, copies, and
// the number between them; ends that meet give every step.
func TestStepEnds(t *testing.T) {
	m := seeded(t, 6)
	all := m.Steps()
	nums := func(steps []agentmem.Step) string {
		var out []int
		for _, s := range steps {
			out = append(out, s.Info().Number)
		}
		return fmt.Sprint(out)
	}
	first, last, omitted := m.StepEnds(2, 3)
	if want := nums(append(append([]agentmem.Step{}, all[:2]...), all[len(all)-3:]...)); nums(append(first, last...)) != want || omitted != len(all)-5 {
		t.Errorf("ends 2, 3: %s %s, %d omitted; want %s", nums(first), nums(last), omitted, want)
	}
	first[0].(*agentmem.SystemPromptStep).Content = "changed"
	if s, _ := m.Step(all[0].Info().Number); s.(*agentmem.SystemPromptStep).Content == "changed" {
		t.Error("StepEnds returned the working set's own step")
	}
	first, last, omitted = m.StepEnds(len(all), 1)
	if nums(first) != nums(all) || len(last) != 0 || omitted != 0 {
		t.Errorf("ends that meet: %s %s, %d omitted", nums(first), nums(last), omitted)
	}
}
