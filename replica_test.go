package agentmem_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
)

// sameAnswers checks that a replica answers what a memory of the same
// working set answers: contexts in several formats, budgets and with a
// strategy, the whole rendering, its cost and the open actions.
func sameAnswers(t *testing.T, m *agentmem.Memory, r *agentmem.Replica) {
	t.Helper()
	if m.Tokens() != r.Tokens() || m.Len() != r.Len() {
		t.Fatalf("the replica holds %d steps costing %d tokens, the memory %d costing %d", r.Len(), r.Tokens(), m.Len(), m.Tokens())
	}
	full := m.Tokens()
	for _, f := range []agentmem.Format{agentmem.OpenAI, render.Anthropic, render.Observation} {
		for _, opts := range []agentmem.ContextOptions{
			{}, {Budget: full / 2}, {Budget: full / 3, TruncateToFill: true}, {Budget: 40}, {Strategy: keepLast(3)},
		} {
			opts.Format = f
			a, errA := m.Context(bg, opts)
			b, errB := r.Context(bg, opts)
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if string(ja) != string(jb) || fmt.Sprint(errA) != fmt.Sprint(errB) {
				t.Fatalf("%s, budget %d: the replica's context\n%s (%v)\nis not the memory's\n%s (%v)", f.Name(), opts.Budget, jb, errB, ja, errA)
			}
		}
	}
	ma, _ := json.Marshal(m.Messages(agentmem.RenderOptions{}))
	ra, _ := json.Marshal(r.Messages(agentmem.RenderOptions{}))
	if string(ma) != string(ra) {
		t.Fatalf("the replica's messages\n%s\nare not the memory's\n%s", ra, ma)
	}
	flush := []agentmem.Message{{Role: agentmem.RoleTool, ToolCallID: "nobody", Content: agentmem.Text("x")}}
	oa, _ := json.Marshal(m.OpenActions(flush, true))
	ob, _ := json.Marshal(r.OpenActions(flush, true))
	if string(oa) != string(ob) {
		t.Fatalf("the replica's open actions\n%s\nare not the memory's\n%s", ob, oa)
	}
}

// TestReplicaMirrorsMemory: a replica loaded with part of a memory's
// working set and put the rest, step by step, answers as the memory does;
// so it does after both take the same amendments (a pending action
// completed, a result popped), and after a reset to a pruned working set.
func TestReplicaMirrorsMemory(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			m := agentmem.New(agentmem.Options{Counter: words{}, Policy: &agentmem.Policy{}})
			randomHistory(t, r, m, 5+r.IntN(40))
			p := pendingAB()
			mustAdd(t, m, p)
			mustAdd(t, m, action(1000, "after the pending one"))
			steps := m.Steps()
			k := r.IntN(len(steps))
			rep, err := agentmem.NewReplica(steps[:k], agentmem.ReplicaOptions{Counter: words{}})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range steps[k:] {
				if added, err := rep.Put(s); !added || err != nil {
					t.Fatalf("Put(step %d) = %v, %v", s.Info().Number, added, err)
				}
			}
			sameAnswers(t, m, rep)

			// The pending action gets its missing result; an action of
			// the history loses its last one.
			var copies []agentmem.Step
			for _, s := range m.Steps() {
				a, ok := s.(*agentmem.ActionStep)
				switch {
				case ok && a.Pending():
					for _, id := range a.Unanswered() {
						a.Results = append(a.Results, agentmem.ToolResult{CallID: id, Content: "late result " + id})
					}
					copies = append(copies, a)
				case ok && len(a.Results) > 0 && len(copies) == 0:
					a.Results = a.Results[:len(a.Results)-1]
					copies = append(copies, a)
				}
			}
			if err := m.Amend(bg, copies...); err != nil {
				t.Fatal(err)
			}
			old, err := rep.Replace(copies...)
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range old {
				if o.Info().Number != copies[i].Info().Number || o.Info().ID != copies[i].Info().ID {
					t.Fatalf("Replace returned step %+v for the copy of %+v", o.Info(), copies[i].Info())
				}
			}
			sameAnswers(t, m, rep)

			if _, err := m.Prune(bg, keepLast(4)); err != nil {
				t.Fatal(err)
			}
			next := rep.NextNumber()
			if err := rep.Reset(m.Steps()); err != nil {
				t.Fatal(err)
			}
			sameAnswers(t, m, rep)
			if rep.NextNumber() < next {
				t.Fatalf("NextNumber went down on Reset: %d, was %d", rep.NextNumber(), next)
			}
		})
	}
}

// TestReplicaPut: a step is kept as given (no ID, time or number is
// stamped on it); the step held already is not put twice; a number out
// of order, or another step's, is refused, and nothing changes.
func TestReplicaPut(t *testing.T) {
	rep, err := agentmem.NewReplica([]agentmem.Step{
		&agentmem.SystemPromptStep{StepInfo: agentmem.StepInfo{Number: 1, ID: "s"}, Content: "sys"},
		&agentmem.TaskStep{StepInfo: agentmem.StepInfo{Number: 4, ID: "t"}, Task: "task"},
	}, agentmem.ReplicaOptions{Counter: words{}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.NextNumber() != 5 {
		t.Fatalf("NextNumber = %d, want 5", rep.NextNumber())
	}
	a := action(9, "result")
	a.Number, a.ID = 9, "a9"
	if added, err := rep.Put(a); !added || err != nil {
		t.Fatalf("Put = %v, %v", added, err)
	}
	got, _ := rep.Step(9)
	if info := got.Info(); info.Number != 9 || info.ID != "a9" || !info.Time.IsZero() {
		t.Fatalf("the step put is %+v, not as given", got.Info())
	}
	a.ModelOutput = "changed after Put"
	if got, _ := rep.Step(9); got.(*agentmem.ActionStep).ModelOutput == a.ModelOutput {
		t.Fatal("the replica holds the caller's step, not a copy")
	}
	if added, err := rep.Put(a); added || err != nil {
		t.Fatalf("Put of a step held already = %v, %v; want false, nil", added, err)
	}
	before := rep.Steps()
	for _, bad := range []agentmem.Step{
		&agentmem.TaskStep{StepInfo: agentmem.StepInfo{Number: 9, ID: "other"}, Task: "another step's number"},
		&agentmem.TaskStep{StepInfo: agentmem.StepInfo{Number: 7, ID: "late"}, Task: "out of order"},
		&agentmem.TaskStep{StepInfo: agentmem.StepInfo{Number: 2, ID: "gap"}, Task: "below a step held"},
		&agentmem.ActionStep{StepInfo: agentmem.StepInfo{Number: 10}, Results: []agentmem.ToolResult{{CallID: "x"}}},
		nil,
	} {
		if added, err := rep.Put(bad); added || !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("Put(%v) = %v, %v; want an ErrInvalid", bad, added, err)
		}
	}
	if b, _ := json.Marshal(before); string(b) != mustJSON(t, rep.Steps()) {
		t.Fatal("a refused Put changed the working set")
	}
}

// TestReplicaReplaceRefuses: copies that stand in for no step, or for a
// step they are not (another ID or kind), or twice for one step, are
// refused whole.
func TestReplicaReplaceRefuses(t *testing.T) {
	m := seeded(t, 3)
	rep, err := agentmem.NewReplica(m.Steps(), agentmem.ReplicaOptions{Counter: words{}})
	if err != nil {
		t.Fatal(err)
	}
	before := mustJSON(t, rep.Steps())
	s, _ := rep.Step(3)
	good := s.(*agentmem.ActionStep)
	good.Observation = "a copy"
	missing := agentmem.CloneStep(good).(*agentmem.ActionStep)
	missing.Number = 99
	otherID := agentmem.CloneStep(good).(*agentmem.ActionStep)
	otherID.ID = "someone else"
	for _, copies := range [][]agentmem.Step{{good, missing}, {good, otherID}, {good, good}, {good, nil}} {
		if _, err := rep.Replace(copies...); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("Replace = %v, want an ErrInvalid", err)
		}
	}
	if mustJSON(t, rep.Steps()) != before {
		t.Fatal("a refused Replace changed the working set")
	}
	if err := rep.Reset([]agentmem.Step{good, good}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("Reset with a repeated number = %v, want an ErrInvalid", err)
	}
	if mustJSON(t, rep.Steps()) != before {
		t.Fatal("a refused Reset changed the working set")
	}
}

// TestReplicaConcurrentUse: contexts rendered while steps are put and
// replaced each see a whole working set (run with -race).
func TestReplicaConcurrentUse(t *testing.T) {
	m := seeded(t, 2)
	rep, err := agentmem.NewReplica(m.Steps(), agentmem.ReplicaOptions{Counter: words{}, Clock: fixedClock(time.Unix(0, 0))})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range 200 {
			a := action(i, "observation")
			a.Number, a.ID = 100+i, fmt.Sprint("a", i)
			if _, err := rep.Put(a); err != nil {
				t.Error(err)
				return
			}
			a.Observation = "amended"
			if _, err := rep.Replace(a); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for range 200 {
			c, err := rep.Context(bg, agentmem.ContextOptions{Budget: 60})
			if err != nil {
				t.Error(err)
				return
			}
			if c.Tokens > 60 {
				t.Errorf("a context of %d tokens, over its budget", c.Tokens)
				return
			}
		}
	}()
	wg.Wait()
	if rep.Len() != 204 {
		t.Fatalf("the replica holds %d steps, want 204", rep.Len())
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
