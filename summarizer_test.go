package agentmem_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
)

func TestSummarizeTrigger(t *testing.T) {
	steps := stList("S T A A A A A") // five unpinned steps
	rec := &stRecorder{}
	// KeepRecent 2 means a default trigger of 4: five steps trigger it.
	out := stApply(t, agentmem.Summarize(rec, agentmem.SummarizeOptions{KeepRecent: 2}), steps, stEnv())
	if len(rec.reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(rec.reqs))
	}
	req := rec.reqs[0]
	if got := stNums(req.Steps); !slices.Equal(got, []int{2, 3, 4}) {
		t.Fatalf("summarized steps %v, want [2 3 4]", got)
	}
	var want []agentmem.Message
	for _, s := range steps[2:5] {
		want = append(want, s.Messages(agentmem.RenderOptions{SummaryMode: true})...)
	}
	if !reflect.DeepEqual(req.Messages, want) {
		t.Fatalf("messages = %+v\nwant %+v", req.Messages, want)
	}
	if req.Previous != "" || req.Condense || req.MaxTokens != agentmem.DefaultMaxSummaryTokens {
		t.Fatalf("request = %+v", req)
	}
	if len(out) != 5 || out[0] != steps[0] || out[1] != steps[1] || out[3] != steps[5] || out[4] != steps[6] {
		t.Fatalf("result %v", stNums(out))
	}
	sum, ok := out[2].(*agentmem.SummaryStep)
	if !ok || sum.Summary != "summary of 3 steps" || sum.ID != "" || fmt.Sprint(sum.Covers) != "[{2 4}]" {
		t.Fatalf("summary = %+v", out[2])
	}

	// Four unpinned steps do not exceed the trigger: the summarizer is not called.
	rec = &stRecorder{}
	out = stApply(t, agentmem.Summarize(rec, agentmem.SummarizeOptions{KeepRecent: 2}), steps[:6], stEnv())
	if len(rec.reqs) != 0 || len(out) != 6 {
		t.Fatalf("below the trigger: %d requests, %d steps", len(rec.reqs), len(out))
	}
	// An explicit trigger.
	out = stApply(t, agentmem.Summarize(rec, agentmem.SummarizeOptions{KeepRecent: 2, Trigger: 3}), steps[:6], stEnv())
	if len(rec.reqs) != 1 || len(out) != 5 {
		t.Fatalf("Trigger 3: %d requests, %d steps", len(rec.reqs), len(out))
	}
	// The defaults: keep 6, trigger above 12.
	rec = &stRecorder{}
	many := stList("S T A A A A A A A A A A A A")
	if out := stApply(t, agentmem.Summarize(rec, agentmem.SummarizeOptions{}), many[:14], stEnv()); len(out) != 14 || len(rec.reqs) != 0 {
		t.Fatalf("12 unpinned steps summarized by default")
	}
	many = append(many, stList("S T A")[2])
	stSetInfo(many[14], agentmem.StepInfo{Number: 14})
	out = stApply(t, agentmem.Summarize(rec, agentmem.SummarizeOptions{}), many, stEnv())
	if len(rec.reqs) != 1 || len(rec.reqs[0].Steps) != 7 || len(out) != 2+1+6 {
		t.Fatalf("13 unpinned steps: %d requests, result %d steps", len(rec.reqs), len(out))
	}
}

func TestSummarizeTriggerTokens(t *testing.T) {
	steps := stList("S T A A A")
	env := stEnv()
	cost := 0
	for _, s := range steps[2:] {
		cost += env.Tokens(s)
	}
	opts := agentmem.SummarizeOptions{KeepRecent: 1, Trigger: -1, TriggerTokens: cost}
	rec := &stRecorder{}
	if out := stApply(t, agentmem.Summarize(rec, opts), steps, env); len(out) != 5 || len(rec.reqs) != 0 {
		t.Fatal("summarized at exactly TriggerTokens")
	}
	opts.TriggerTokens = cost - 1
	if out := stApply(t, agentmem.Summarize(rec, opts), steps, env); len(out) != 4 || len(rec.reqs) != 1 {
		t.Fatalf("not summarized over TriggerTokens: %d steps", len(out))
	}
	// With the count trigger off and no token trigger, it never runs.
	rec = &stRecorder{}
	if out := stApply(t, agentmem.Summarize(rec, agentmem.SummarizeOptions{KeepRecent: 1, Trigger: -1}), steps, env); len(out) != 5 || len(rec.reqs) != 0 {
		t.Fatal("summarized with every trigger off")
	}
}

func TestSummarizeExtendsThePreviousSummary(t *testing.T) {
	m, _ := stSeeded(t, 6) // 0 system, 1 task, 2..7 actions
	rec := &stRecorder{answers: []string{"first summary", "second summary"}}
	strategy := agentmem.Summarize(rec, agentmem.SummarizeOptions{KeepRecent: 2, Trigger: 3})

	next := m.NextNumber()
	comp, err := m.Prune(stCtx(), strategy)
	if err != nil {
		t.Fatal(err)
	}
	if got := stNums(comp.Removed); !slices.Equal(got, []int{2, 3, 4, 5}) {
		t.Fatalf("removed %v", got)
	}
	if len(comp.Added) != 1 || comp.Added[0].Info().Number != next || comp.Added[0].Info().ID == "" {
		t.Fatalf("added %+v; the summary must get the next number, %d, and an ID", comp.Added, next)
	}
	stWantNums(t, "after the first summary", m.Steps(), 0, 1, next, 6, 7)

	for i := range 3 {
		stAdd(t, m, stAction(10+i, "more work"))
	} // 9, 10, 11
	comp, err = m.Prune(stCtx(), strategy)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.reqs) != 2 {
		t.Fatalf("%d requests", len(rec.reqs))
	}
	req := rec.reqs[1]
	if req.Previous != "first summary" {
		t.Fatalf("Previous = %q, want the first summary", req.Previous)
	}
	if got := stNums(req.Steps); !slices.Equal(got, []int{6, 7, 9}) {
		t.Fatalf("second round summarized %v, want [6 7 9] (not the summary step)", got)
	}
	sum := comp.Added[0].(*agentmem.SummaryStep)
	if sum.Number != 12 || sum.Summary != "second summary" || fmt.Sprint(sum.Covers) != "[{2 7} {9 9}]" {
		t.Fatalf("second summary #%d %q covers %v", sum.Number, sum.Summary, sum.Covers)
	}
	if got := stNums(comp.Removed); !slices.Equal(got, []int{next, 6, 7, 9}) {
		t.Fatalf("removed %v", got)
	}
	stWantNums(t, "after the second summary", m.Steps(), 0, 1, 12, 10, 11)
	if m.Summary() != "second summary" {
		t.Fatalf("Summary() = %q", m.Summary())
	}
}

func TestSummarizeCondensesALongSummary(t *testing.T) {
	steps := stList("S T A A A A")
	long := strings.Repeat("word ", 30)
	short := "a condensed summary"
	rec := &stRecorder{answers: []string{long, short}}
	opts := agentmem.SummarizeOptions{KeepRecent: 1, Trigger: 1, MaxSummaryTokens: 10}
	out := stApply(t, agentmem.Summarize(rec, opts), steps, stEnv())
	if len(rec.reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(rec.reqs))
	}
	if got := rec.reqs[0]; got.MaxTokens != 10 || got.Condense {
		t.Fatalf("first request = %+v", got)
	}
	want := agentmem.SummaryRequest{Previous: long, MaxTokens: 10, Condense: true}
	if !reflect.DeepEqual(rec.reqs[1], want) {
		t.Fatalf("condense request = %+v, want %+v", rec.reqs[1], want)
	}
	if got := out[2].(*agentmem.SummaryStep).Summary; got != short {
		t.Fatalf("summary = %q", got)
	}

	// A summary that stays too long is cut to fit.
	rec = &stRecorder{answers: []string{long}}
	out = stApply(t, agentmem.Summarize(rec, opts), steps, stEnv())
	got := out[2].(*agentmem.SummaryStep).Summary
	if n := (stWords{}).Count(got); n > 10 || n < 9 || !strings.HasPrefix(long, got) {
		t.Fatalf("cut summary %q has %d words", got, n)
	}
}

func TestSummarizeErrorsLeaveTheMemoryUnchanged(t *testing.T) {
	boom := errors.New("model unavailable")
	for name, sum := range map[string]agentmem.Summarizer{
		"error": &stRecorder{err: boom},
		"empty": &stRecorder{answers: []string{"  \n"}},
		"condense error": agentmem.SummarizerFunc(func(_ context.Context, req agentmem.SummaryRequest) (string, error) {
			if req.Condense {
				return "", boom
			}
			return strings.Repeat("long ", 2000), nil
		}),
	} {
		m, _ := stSeeded(t, 8)
		before, next := m.Steps(), m.NextNumber()
		var reported error
		_, err := m.Prune(stCtx(), agentmem.Summarize(sum, agentmem.SummarizeOptions{KeepRecent: 2, Trigger: 2}))
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		if name == "empty" {
			reported = agentmem.ErrInvalid
		} else {
			reported = boom
		}
		if !errors.Is(err, reported) {
			t.Fatalf("%s: err = %v, want it to wrap %v", name, err, reported)
		}
		if !reflect.DeepEqual(m.Steps(), before) || m.NextNumber() != next {
			t.Fatalf("%s: a failed summary changed the memory", name)
		}
		if _, err := m.Summarize(stCtx(), sum, 2); !errors.Is(err, reported) {
			t.Fatalf("%s: Memory.Summarize err = %v", name, err)
		}
		if !reflect.DeepEqual(m.Steps(), before) {
			t.Fatalf("%s: a failed Memory.Summarize changed the memory", name)
		}
	}
	if _, err := agentmem.Summarize(nil, agentmem.SummarizeOptions{}).Apply(stCtx(), stList("S T A"), nil); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("nil summarizer: %v", err)
	}
}

func TestMemorySummarize(t *testing.T) {
	m, _ := stSeeded(t, 5) // 0 system, 1 task, 2..6 actions
	rec := &stRecorder{answers: []string{"the agent searched five times"}}
	want := m.MessagesToSummarize(2)

	comp, err := m.Summarize(stCtx(), rec, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.reqs) != 1 || !reflect.DeepEqual(rec.reqs[0].Messages, want) {
		t.Fatalf("request messages differ from MessagesToSummarize(2)")
	}
	if got := stNums(comp.Removed); !slices.Equal(got, []int{2, 3, 4}) || len(comp.Added) != 1 || comp.Before != 7 || comp.After != 5 {
		t.Fatalf("compaction removed %v, added %d, %d → %d", got, len(comp.Added), comp.Before, comp.After)
	}
	stWantNums(t, "working set", m.Steps(), 0, 1, 7, 5, 6)

	// Nothing new to summarize: the summarizer is not called and nothing changes.
	comp, err = m.Summarize(stCtx(), rec, 2)
	if err != nil || comp == nil || comp.Changed() || comp.Before != 5 || comp.After != 5 || len(rec.reqs) != 1 {
		t.Fatalf("no-op Summarize: %+v, %v, %d requests", comp, err, len(rec.reqs))
	}
	// keepRecent is literal: zero summarizes every unpinned step.
	comp, err = m.Summarize(stCtx(), rec, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.reqs[1].Previous != "the agent searched five times" || !slices.Equal(stNums(rec.reqs[1].Steps), []int{5, 6}) {
		t.Fatalf("second request %+v", rec.reqs[1])
	}
	stWantNums(t, "after Summarize(0)", m.Steps(), 0, 1, 8)
	if got := comp.Added[0].(*agentmem.SummaryStep).Covers; fmt.Sprint(got) != "[{2 6}]" {
		t.Fatalf("covers %v", got)
	}
	if _, err := m.Summarize(stCtx(), nil, 0); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("nil summarizer: %v", err)
	}
}

func TestMemorySummarizeDoesNotBlockTheMemory(t *testing.T) {
	m, _ := stSeeded(t, 5)
	started, release := make(chan struct{}), make(chan struct{})
	slow := agentmem.SummarizerFunc(func(ctx context.Context, req agentmem.SummaryRequest) (string, error) {
		close(started)
		<-release
		return "summary", nil
	})
	done := make(chan error)
	go func() { _, err := m.Summarize(stCtx(), slow, 1); done <- err }()
	<-started
	// The agent goes on while the summarizer runs.
	stAdd(t, m, stAction(99, "arrived during the summary"))
	if _, err := m.Context(stCtx(), agentmem.ContextOptions{Budget: 1000}); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	stWantNums(t, "working set", m.Steps(), 0, 1, 8, 6, 7)
}

func ExampleSummarize() {
	m := agentmem.New(agentmem.Options{})
	ctx := context.Background()
	_, _ = m.Add(ctx, &agentmem.SystemPromptStep{Content: "You are a research agent."})
	_, _ = m.Add(ctx, &agentmem.TaskStep{Task: "Compare the three datasets."})
	for i := range 5 {
		id := fmt.Sprintf("call_%d", i)
		_, _ = m.Add(ctx, &agentmem.ActionStep{
			ToolCalls: []agentmem.ToolCall{{ID: id, Name: "load", Arguments: fmt.Sprintf(`{"dataset":%d}`, i)}},
			Results:   []agentmem.ToolResult{{CallID: id, Content: fmt.Sprintf("dataset %d: 1000 rows", i)}},
		})
	}

	// A summarizer would call a model; this one lists what it was given.
	summarizer := agentmem.SummarizerFunc(func(_ context.Context, req agentmem.SummaryRequest) (string, error) {
		var lines []string
		for _, msg := range req.Messages {
			if msg.Role == agentmem.RoleTool {
				lines = append(lines, msg.Text())
			}
		}
		return "Loaded " + strings.Join(lines, "; "), nil
	})

	// Summarize everything but the two newest steps once there are more
	// than four unpinned steps.
	comp, err := m.Prune(ctx, agentmem.Summarize(summarizer, agentmem.SummarizeOptions{KeepRecent: 2, Trigger: 4}))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("replaced", len(comp.Removed), "steps")
	for _, s := range m.Steps() {
		fmt.Printf("#%d %s\n", s.Info().Number, s.Kind())
	}
	fmt.Println(m.Summary())
	// Output:
	// replaced 3 steps
	// #0 system_prompt
	// #1 task
	// #7 summary
	// #5 action
	// #6 action
	// Loaded dataset 0: 1000 rows; dataset 1: 1000 rows; dataset 2: 1000 rows
}
