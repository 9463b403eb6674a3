package agentmem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/agentmem/agentmem"
)

// amendJournal is a journal that records amendments as such.
type amendJournal struct {
	logJournal
	amended [][]agentmem.Step
}

func (j *amendJournal) Amend(_ context.Context, steps []agentmem.Step) error {
	j.amended = append(j.amended, steps)
	return nil
}

// sameAsRestored checks that m's context (unbudgeted and budgeted), its
// pending action and its token count are those of a memory restored from
// its steps, which indexes them from scratch.
func sameAsRestored(t *testing.T, m *agentmem.Memory, policy *agentmem.Policy) {
	t.Helper()
	r := agentmem.New(agentmem.Options{Counter: words{}, Policy: policy})
	if err := r.Restore(m.Snapshot()); err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{0, m.Tokens() - 60} {
		a, errA := m.Context(bg, agentmem.ContextOptions{Budget: budget})
		b, errB := r.Context(bg, agentmem.ContextOptions{Budget: budget})
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) || fmt.Sprint(errA) != fmt.Sprint(errB) {
			t.Fatalf("budget %d: the amended memory's context\n%s (%v)\nis not the restored one's\n%s (%v)", budget, ja, errA, jb, errB)
		}
	}
	pa, _ := json.Marshal(m.Pending())
	pb, _ := json.Marshal(r.Pending())
	if string(pa) != string(pb) || m.Tokens() != r.Tokens() {
		t.Fatalf("pending %s, %d tokens; restored: %s, %d", pa, m.Tokens(), pb, r.Tokens())
	}
}

// TestAmend: copies put in place of steps complete a pending action or
// make one pending again, and the memory is then what a memory restored
// from its steps is (contexts, pending actions, tokens); the journal
// records them as an amendment, or as a compaction that replaces them.
// Copies that stand in for no step of the working set change nothing.
func TestAmend(t *testing.T) {
	for _, amender := range []bool{true, false} {
		t.Run(fmt.Sprintf("amender=%v", amender), func(t *testing.T) {
			j := &amendJournal{logJournal: logJournal{next: 1}}
			var journal agentmem.Journal = &j.logJournal
			if amender {
				journal = j
			}
			policy := &agentmem.Policy{MaxTokens: 1 << 20}
			m := agentmem.New(agentmem.Options{Counter: words{}, Journal: journal, Policy: policy})
			mustAdd(t, m, &agentmem.SystemPromptStep{Content: "sys"})
			mustAdd(t, m, &agentmem.TaskStep{Task: "task"})
			mustAdd(t, m, action(1, "one two three four"))
			p := pendingAB()
			p.Number = 0
			info := mustAdd(t, m, p)
			mustAdd(t, m, action(2, "five six seven"))
			mustAdd(t, m, &agentmem.TaskStep{Task: "and then"})
			sameAsRestored(t, m, policy)

			s, _ := m.Step(info.Number)
			done := s.(*agentmem.ActionStep)
			done.Results = append(done.Results, agentmem.ToolResult{CallID: "b", Content: "result b is long enough to count"})
			if err := m.Amend(bg, done); err != nil {
				t.Fatal(err)
			}
			if m.Pending() != nil {
				t.Fatal("the completed action is still pending")
			}
			sameAsRestored(t, m, policy)
			if got, _ := m.Step(info.Number); len(got.(*agentmem.ActionStep).Results) != 2 {
				t.Fatalf("the working set holds %+v", got)
			}

			_, rest, ok := done.PopResult("a")
			if !ok {
				t.Fatal("PopResult")
			}
			if err := m.Amend(bg, rest); err != nil {
				t.Fatal(err)
			}
			if p := m.Pending(); p == nil || p.Number != info.Number {
				t.Fatalf("the action whose result was taken is not pending: %+v", p)
			}
			sameAsRestored(t, m, policy)

			if amender {
				if len(j.amended) != 2 || len(j.comps) != 0 || j.amended[1][0].(*agentmem.ActionStep).Pending() != true {
					t.Fatalf("amendments %+v, compactions %+v", j.amended, j.comps)
				}
			} else if len(j.comps) != 2 || fmt.Sprint(j.comps[0].Replaced) != "[3]" || len(j.comps[0].Working) != 6 {
				t.Fatalf("compactions %+v", j.comps)
			}

			before, _ := json.Marshal(m.Snapshot())
			other := action(9, "x")
			other.Number, other.ID = 99, "nobody"
			wrongID, _ := m.Step(info.Number)
			wrongID = agentmem.WithInfo(wrongID, agentmem.StepInfo{Number: info.Number, ID: "another"})
			twice, _ := m.Step(2)
			for name, copies := range map[string][]agentmem.Step{
				"a step not in the working set": {other},
				"another ID":                    {wrongID},
				"the same step twice":           {twice, twice},
				"nil":                           {nil},
			} {
				if err := m.Amend(bg, copies...); !errors.Is(err, agentmem.ErrInvalid) {
					t.Errorf("%s: %v", name, err)
				}
			}
			if after, _ := json.Marshal(m.Snapshot()); string(after) != string(before) {
				t.Errorf("refused amendments changed the memory")
			}
		})
	}
}

// TestOpenActions: the actions a fold may answer, picked from a working
// set and from a memory holding it, are those that made a call a tool
// message names, answered or not, and with flush every pending one; a
// memory's are copies.
func TestOpenActions(t *testing.T) {
	m := pendingMemory(t) // step 3 is pending (calls a and b), 2 and 4 are complete
	steps := m.Steps()
	numbers := func(open []*agentmem.ActionStep) string {
		var out []int
		for _, a := range open {
			out = append(out, a.Number)
		}
		return fmt.Sprint(out)
	}
	for _, c := range []struct {
		msgs  []agentmem.Message
		flush bool
		want  string
	}{
		{nil, false, "[]"},
		{[]agentmem.Message{{Role: agentmem.RoleUser, Content: agentmem.Text("hi")}}, false, "[]"},
		{nil, true, "[3]"},
		{[]agentmem.Message{toolMsg("b", "x")}, false, "[3]"},
		{[]agentmem.Message{toolMsg("call_2", "x")}, false, "[4]"},  // answered: a retry is recognised
		{[]agentmem.Message{toolMsg("call_2", "x")}, true, "[3 4]"}, // in order
		{[]agentmem.Message{toolMsg("nobody", "x")}, false, "[]"},
	} {
		fromSteps := agentmem.OpenActions(steps, c.msgs, c.flush)
		fromMem := m.OpenActions(c.msgs, c.flush)
		if numbers(fromSteps) != c.want || numbers(fromMem) != c.want {
			t.Errorf("%v flush %v: %s from the steps, %s from the memory; want %s", c.msgs, c.flush, numbers(fromSteps), numbers(fromMem), c.want)
		}
	}
	open := m.OpenActions([]agentmem.Message{toolMsg("b", "x")}, false)
	open[0].Results = nil
	if s, _ := m.Step(3); len(s.(*agentmem.ActionStep).Results) != 1 {
		t.Fatal("OpenActions returned the memory's own step")
	}
}

// TestMemoryOpenActionsFoldAsTheWholeChoice: folding messages against a
// memory's OpenActions gives what folding them against the function
// OpenActions' choice over its steps gives (the new steps, the updated
// copies, the repeated results, the error), for every sequence of up to
// three messages among results for pending, answered, reused and unknown
// calls, new calls and other messages, with and without flush; and the
// memory's choice leaves out the actions that have their results when
// the results are for pending calls.
func TestMemoryOpenActionsFoldAsTheWholeChoice(t *testing.T) {
	m := agentmem.New(agentmem.Options{Counter: words{}, Policy: &agentmem.Policy{}})
	calls := func(ids ...string) []agentmem.ToolCall {
		var out []agentmem.ToolCall
		for _, id := range ids {
			out = append(out, call(id, "f"))
		}
		return out
	}
	results := func(ids ...string) []agentmem.ToolResult {
		var out []agentmem.ToolResult
		for _, id := range ids {
			out = append(out, agentmem.ToolResult{CallID: id, Content: "r " + id})
		}
		return out
	}
	mustAdd(t, m, &agentmem.TaskStep{Task: "task"})
	mustAdd(t, m, &agentmem.ActionStep{ToolCalls: calls("x"), Results: results("x")})
	mustAdd(t, m, &agentmem.ActionStep{ToolCalls: calls("a", "b"), Results: results("a")}) // pending: b
	mustAdd(t, m, &agentmem.ActionStep{ToolCalls: calls("b"), Results: results("b")})      // b again, answered
	mustAdd(t, m, &agentmem.ActionStep{ToolCalls: calls("c", "d")})                        // pending: c, d
	mustAdd(t, m, &agentmem.ActionStep{ToolCalls: calls("a")})                             // a again, pending
	candidates := []agentmem.Message{
		toolMsg("b", "r b"), toolMsg("b", "other"), toolMsg("c", "r c"), toolMsg("d", "r d"),
		toolMsg("a", "r a"), toolMsg("x", "r x"), toolMsg("zz", "r zz"),
		{Role: agentmem.RoleAssistant, ToolCalls: calls("c")},
		{Role: agentmem.RoleUser, Content: agentmem.Text("next")},
	}
	fold := func(open []*agentmem.ActionStep, msgs []agentmem.Message, flush bool) string {
		n := 0
		f, err := agentmem.FoldMessages(open, msgs, agentmem.FoldOptions{KeepPending: true, Flush: flush, NewID: func() string { n++; return fmt.Sprint("n", n) }})
		b, _ := json.Marshal(f)
		return fmt.Sprintf("%s %v", b, err)
	}
	var seqs [][]agentmem.Message
	for _, a := range candidates {
		seqs = append(seqs, []agentmem.Message{a})
		for _, b := range candidates {
			seqs = append(seqs, []agentmem.Message{a, b})
			for _, c := range candidates {
				seqs = append(seqs, []agentmem.Message{a, b, c})
			}
		}
	}
	steps := m.Steps()
	fewer := 0
	for _, msgs := range seqs {
		for _, flush := range []bool{false, true} {
			mine, whole := m.OpenActions(msgs, flush), agentmem.OpenActions(steps, msgs, flush)
			if len(mine) < len(whole) {
				fewer++
			}
			if got, want := fold(mine, msgs, flush), fold(whole, msgs, flush); got != want {
				t.Fatalf("%+v flush %v: folded against the memory's choice\n%s\nagainst the whole choice\n%s", msgs, flush, got, want)
			}
		}
	}
	if fewer == 0 {
		t.Fatal("the memory's choice was never smaller than the whole one")
	}
	if open := m.OpenActions([]agentmem.Message{toolMsg("b", "r b")}, false); len(open) != 1 || open[0].Number != 2 {
		t.Fatalf("a result for a pending call: %+v", open)
	}
}
