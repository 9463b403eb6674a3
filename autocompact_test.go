package agentmem_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/summarize"
	"github.com/agentmem/agentmem/tokenizer"
)

// TestAutoCompactionSettles runs 200 steps of an agent loop and of a chat
// under a token policy with a summarizer: the summarizer runs at most once
// per (trigger − target) tokens of growth, plus one; after every add the
// working set is at most the trigger; and every step added is in the
// working set or in a compaction's removed steps.
func TestAutoCompactionSettles(t *testing.T) {
	counter := tokenizer.NewHeuristic()
	for _, tc := range []struct {
		name            string
		trigger, target int
		chat            bool
		repeat          int // a tool result's length, in lines of about 8 tokens
	}{
		{"agent run, default target", 6000, 0, false, 20},
		{"agent run, target a third", 9000, 3000, false, 20},
		// Eight steps kept verbatim would cost almost the trigger: a
		// compaction that kept them would run again on the next add.
		{"agent run, big steps", 7000, 0, false, 80},
		{"chat", 6000, 2500, true, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var calls atomic.Int32
			sum := agentmem.SummarizerFunc(func(ctx context.Context, req agentmem.SummaryRequest) (string, error) {
				calls.Add(1)
				return summarize.Extractive{Counter: counter}.Summarize(ctx, req)
			})
			removed := map[int]bool{}
			var compactErr error
			pin := agentmem.DefaultPinning
			if tc.chat {
				pin = agentmem.ChatPinning
			}
			m := agentmem.New(agentmem.Options{
				Counter: counter,
				Pinning: &pin,
				Policy: &agentmem.Policy{MaxTokens: tc.trigger, TargetTokens: tc.target,
					Strategy: agentmem.Summarize(sum, agentmem.SummarizeOptions{KeepRecent: 8, MaxSummaryTokens: 300})},
				OnCompact: func(c *agentmem.Compaction, err error) {
					if err != nil {
						compactErr = err
						return
					}
					for _, s := range c.Removed {
						removed[s.Info().Number] = true
					}
				},
			})
			target := tc.target
			if target == 0 {
				target = tc.trigger / 2
			}
			growth, added := 0, 0
			var numbers []int
			add := func(s agentmem.Step) {
				t.Helper()
				info, err := m.Add(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				added++
				numbers = append(numbers, info.Number)
				growth += agentmem.NewEnv(agentmem.EnvOptions{Counter: counter}).Tokens(agentmem.WithInfo(s, info))
				if compactErr != nil {
					t.Fatalf("compaction failed: %v", compactErr)
				}
				if got := m.Tokens(); got > tc.trigger {
					t.Fatalf("after add %d the working set costs %d tokens, over the trigger %d", added, got, tc.trigger)
				}
			}
			add(&agentmem.SystemPromptStep{Content: "You are an agent that reads files and answers."})
			for i := 0; added < 200; i++ {
				if tc.chat || i == 0 {
					add(&agentmem.TaskStep{Task: fmt.Sprintf("Question %d: what does file %d say?", i, i)})
				}
				id := fmt.Sprintf("call_%d", i)
				add(&agentmem.ActionStep{ToolCalls: []agentmem.ToolCall{{ID: id, Name: "read_file", Arguments: fmt.Sprintf(`{"n":%d}`, i)}},
					Results: []agentmem.ToolResult{{CallID: id, Content: strings.Repeat(fmt.Sprintf("line %d of file %d. ", i, i), tc.repeat+i%7*10)}}})
				if tc.chat {
					add(&agentmem.ActionStep{ModelOutput: fmt.Sprintf("File %d says line %d.", i, i)})
				}
			}
			limit := growth/(tc.trigger-target) + 1
			if n := int(calls.Load()); n == 0 || n > limit {
				t.Fatalf("the summarizer ran %d times for %d tokens of growth; at most %d", n, growth, limit)
			}
			kept := map[int]bool{}
			for _, s := range m.Steps() {
				kept[s.Info().Number] = true
			}
			for _, n := range numbers {
				if !kept[n] && !removed[n] {
					t.Fatalf("step %d is neither in the working set nor removed by a compaction", n)
				}
			}
			t.Logf("%d steps, %d tokens of growth, %d summaries (at most %d)", added, growth, calls.Load(), limit)
		})
	}
}

// TestApplyPolicy: a memory restored over its policy is compacted by
// ApplyPolicy (an add would have done it), down to the target; within
// the policy it changes nothing.
func TestApplyPolicy(t *testing.T) {
	ctx := context.Background()
	counter := tokenizer.NewHeuristic()
	full := agentmem.New(agentmem.Options{Counter: counter, Policy: &agentmem.Policy{}})
	mustAdd(t, full, &agentmem.SystemPromptStep{Content: "sys"})
	mustAdd(t, full, &agentmem.TaskStep{Task: "task"})
	for i := range 40 {
		mustAdd(t, full, &agentmem.ActionStep{ModelOutput: strings.Repeat(fmt.Sprintf("step %d. ", i), 40)})
	}
	policy := &agentmem.Policy{MaxTokens: 2000, TargetTokens: 1000,
		Strategy: agentmem.Summarize(summarize.Extractive{Counter: counter}, agentmem.SummarizeOptions{MaxSummaryTokens: 200})}
	m := agentmem.New(agentmem.Options{Counter: counter, Policy: policy})
	if err := m.Restore(full.Snapshot()); err != nil {
		t.Fatal(err)
	}
	if m.Tokens() <= 2000 {
		t.Fatalf("the restored memory costs %d tokens: the test needs it over the policy", m.Tokens())
	}
	comp, err := m.ApplyPolicy(ctx)
	if err != nil || !comp.Changed() {
		t.Fatalf("ApplyPolicy over the policy: %+v, %v", comp, err)
	}
	if got := m.Tokens(); got > 1000 {
		t.Fatalf("after ApplyPolicy the working set costs %d tokens, over the target 1000", got)
	}
	if comp, err := m.ApplyPolicy(ctx); err != nil || comp.Changed() {
		t.Fatalf("ApplyPolicy within the policy: %+v, %v", comp, err)
	}
}
