package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
)

// memOptions are the options of the suite's bound memories: a cheap
// counter and the subtest's clock.
func (e *env) memOptions() agentmem.Options {
	return agentmem.Options{Counter: tokenizer.NewHeuristic(), Clock: e.clock.Now}
}

func (e *env) openMemory(id string) *store.Bound {
	e.t.Helper()
	b, err := store.OpenMemory(e.ctx, e.st, id, e.memOptions())
	if err != nil {
		e.t.Fatalf("OpenMemory(%q): %v", id, err)
	}
	return b
}

func (e *env) add(b *store.Bound, s agentmem.Step) agentmem.StepInfo {
	e.t.Helper()
	info, err := b.Add(e.ctx, s)
	if err != nil {
		e.t.Fatalf("Add: %v", err)
	}
	return info
}

// freshAction is an action step without ID or number, as an agent adds it.
func freshAction(name string) *agentmem.ActionStep {
	s := actionStep(name)
	s.StepInfo = agentmem.StepInfo{}
	return s
}

// wantSameMemory checks that two memories hold the same working set.
func (e *env) wantSameMemory(got, want *store.Bound, what string) {
	e.t.Helper()
	if g, w := e.stepsJSON(got.Steps()), e.stepsJSON(want.Steps()); g != w {
		e.t.Fatalf("%s: working set\n%s\nwant\n%s", what, g, w)
	}
}

// wantStoreHoldsMemory checks that the session's stored working set is the
// memory's.
func (e *env) wantStoreHoldsMemory(b *store.Bound, what string) {
	e.t.Helper()
	id := b.Session().ID
	if g, w := e.stepsJSON(e.workingSet(id)), e.stepsJSON(b.Steps()); g != w {
		e.t.Fatalf("%s: stored working set\n%s\nmemory\n%s", what, g, w)
	}
}

func (s *suite) boundTests() []namedTest {
	return []namedTest{
		{"AddAndReopen", func(t *testing.T) {
			e := s.open(t)
			b, err := store.CreateMemory(e.ctx, e.st, store.CreateRequest{ID: "m"}, e.memOptions())
			if err != nil {
				t.Fatal(err)
			}
			e.add(b, &agentmem.SystemPromptStep{Content: "be brief"})
			e.add(b, &agentmem.TaskStep{Task: "count to three"})
			for i := range 3 {
				info := e.add(b, freshAction(fmt.Sprint(i)))
				if info.Number != i+3 {
					t.Fatalf("step number %d, want the seq %d", info.Number, i+3)
				}
			}
			if got := b.Session().LastSeq; got != 5 {
				t.Fatalf("Session().LastSeq = %d", got)
			}
			e.wantSeqs(seqsOf(e.entries("m")), seqRange(1, 5), "log written through")
			e.wantStoreHoldsMemory(b, "after adds")
			again := e.openMemory("m")
			e.wantSameMemory(again, b, "reopened memory")
			if again.NextNumber() != 6 {
				t.Fatalf("reopened NextNumber %d, want 6", again.NextNumber())
			}
			e.add(again, freshAction("after"))
			e.wantSeqs(seqsOf(e.entries("m")), seqRange(1, 6), "log after an add to the reopened memory")
		}},
		{"CreateWithSystemPrompt", func(t *testing.T) {
			// Options.SystemPrompt: the first step of a new session,
			// written through once, not again on reopening, and not
			// added to a branch, which has its parent's.
			e := s.open(t)
			opts := e.memOptions()
			opts.SystemPrompt = "you are terse"
			b, err := store.CreateMemory(e.ctx, e.st, store.CreateRequest{ID: "sp"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			steps := b.Steps()
			if len(steps) != 1 || steps[0].(*agentmem.SystemPromptStep).Content != "you are terse" {
				t.Fatalf("new session's steps: %+v", steps)
			}
			e.wantSeqs(seqsOf(e.entries("sp")), seqRange(1, 1), "the prompt written through")
			again, err := store.OpenMemory(e.ctx, e.st, "sp", opts)
			if err != nil {
				t.Fatal(err)
			}
			e.wantSameMemory(again, b, "reopened with the option")
			br, err := store.CreateMemory(e.ctx, e.st, store.CreateRequest{ID: "sp-branch", ParentID: "sp"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			e.wantSameMemory(br, b, "branch")
		}},
		{"MessageAPI", func(t *testing.T) {
			e := s.open(t)
			b, err := store.CreateMemory(e.ctx, e.st, store.CreateRequest{ID: "chat"}, e.memOptions())
			if err != nil {
				t.Fatal(err)
			}
			if err := b.AddUser(e.ctx, "what's the weather?"); err != nil {
				t.Fatal(err)
			}
			call := agentmem.ToolCall{ID: "c1", Name: "weather", Arguments: `{"city":"Oslo"}`}
			if err := b.AddAssistant(e.ctx, agentmem.Message{Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{call}}); err != nil {
				t.Fatal(err)
			}
			if err := b.AddToolResult(e.ctx, "c1", "rainy", false); err != nil {
				t.Fatal(err)
			}
			if err := b.AddAssistant(e.ctx, agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text("It rains.")}); err != nil {
				t.Fatal(err)
			}
			e.wantStoreHoldsMemory(b, "chat")
			e.wantSameMemory(e.openMemory("chat"), b, "reopened chat")
		}},
		{"SummaryReopenLoadsWorkingSet", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "sum"})
			b := e.openMemory("sum")
			e.add(b, &agentmem.SystemPromptStep{Content: "sys"})
			e.add(b, &agentmem.TaskStep{Task: "long task"})
			for i := range 8 {
				e.add(b, freshAction(fmt.Sprint(i)))
			}
			comp, err := b.SetSummary(e.ctx, "eight searches, nothing found", 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(comp.Added) != 1 || comp.Added[0].Info().Number != 11 {
				t.Fatalf("summary step: %+v", comp.Added)
			}
			entries := e.entries("sum")
			e.wantSeqs(seqsOf(entries), seqRange(1, 12), "log: 10 steps, the summary, the compaction")
			if entries[11].Kind != store.CompactionEntry {
				t.Fatalf("entry 12 is a %s", entries[11].Kind)
			}
			e.wantStoreHoldsMemory(b, "after SetSummary")
			again := e.openMemory("sum")
			e.wantSameMemory(again, b, "reopened after a summary")
			if again.Len() != 5 || again.Summary() != "eight searches, nothing found" {
				t.Fatalf("reopened memory: %d steps, summary %q", again.Len(), again.Summary())
			}
			e.add(again, freshAction("next"))
			if got := e.read(store.ReadRequest{SessionID: "sum", WorkingSet: true}).Steps; len(got) != 6 {
				t.Fatalf("working set after one more add: %d steps", len(got))
			}
		}},
		{"TruncatedCopiesSurviveLaterCompactions", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "tr"})
			b := e.openMemory("tr")
			e.add(b, &agentmem.TaskStep{Task: "t"})
			for i := range 4 {
				e.add(b, freshAction(fmt.Sprint(i)))
			}
			if _, err := b.Prune(e.ctx, agentmem.PruneOldObservations(1, 20)); err != nil {
				t.Fatal(err)
			}
			e.wantStoreHoldsMemory(b, "after truncating")
			e.wantSameMemory(e.openMemory("tr"), b, "reopened after truncating")
			// A later compaction keeps the truncated steps truncated.
			e.add(b, freshAction("late"))
			if _, err := b.SetSummary(e.ctx, "older steps", 3); err != nil {
				t.Fatal(err)
			}
			e.wantStoreHoldsMemory(b, "after a summary that keeps truncated steps")
			again := e.openMemory("tr")
			e.wantSameMemory(again, b, "reopened after the summary")
			// And so does one made by a memory that was reloaded.
			if _, err := again.Prune(e.ctx, agentmem.KeepLastN(3)); err != nil {
				t.Fatal(err)
			}
			e.wantStoreHoldsMemory(again, "after a compaction by a reloaded memory")
		}},
		{"LibraryStrategies", func(t *testing.T) {
			// Every strategy of the library compacts a bound memory, those
			// that drop a pinned step on purpose included: the library's
			// record names every step that left (Removed), which is what
			// lets a pinned step go (storekit.CheckPinned).
			e := s.open(t)
			n := 0
			for name, strategy := range map[string]agentmem.Strategy{
				"KeepLastN":            agentmem.KeepLastN(2),
				"KeepLastNActions":     agentmem.KeepLastNActions(1),
				"KeepSystemAndRecent":  agentmem.KeepSystemAndRecent(2), // drops the first task
				"DropKinds":            agentmem.DropKinds(agentmem.KindAction, agentmem.KindTask),
				"PruneOldObservations": agentmem.PruneOldObservations(1, 10),
				"TokenBudget":          agentmem.TokenBudget(300),
				"a strategy dropping the system prompt": agentmem.StrategyFunc(func(_ context.Context, steps []agentmem.Step, _ *agentmem.Env) ([]agentmem.Step, error) {
					return steps[1:], nil
				}),
			} {
				id := fmt.Sprintf("st%d", n)
				n++
				e.create(store.CreateRequest{ID: id})
				b := e.openMemory(id)
				e.add(b, &agentmem.SystemPromptStep{Content: "sys"})
				e.add(b, &agentmem.TaskStep{Task: "the task"})
				for i := range 4 {
					e.add(b, freshAction(fmt.Sprint(i)))
				}
				e.add(b, &agentmem.TaskStep{Task: "a follow-up"})
				e.add(b, freshAction("last"))
				comp, err := b.Prune(e.ctx, strategy)
				if err != nil {
					t.Fatalf("%s on a bound memory: %v", name, err)
				}
				if !comp.Changed() {
					t.Fatalf("%s changed nothing: pick arguments that compact", name)
				}
				e.wantStoreHoldsMemory(b, name)
				e.wantSameMemory(e.openMemory(id), b, name+", reopened")
			}
		}},
		{"ClearIsRecorded", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "cl"})
			b := e.openMemory("cl")
			e.add(b, &agentmem.TaskStep{Task: "t"})
			e.add(b, freshAction("a"))
			if err := b.Clear(e.ctx); err != nil {
				t.Fatal(err)
			}
			if n := len(e.workingSet("cl")); n != 0 || e.openMemory("cl").Len() != 0 {
				t.Fatalf("after Clear the stored working set has %d steps", n)
			}
			e.add(b, freshAction("b"))
			e.wantSameMemory(e.openMemory("cl"), b, "after clear and add")
			if n := len(e.entries("cl")); n != 4 {
				t.Fatalf("log after clear: %d entries, want 2 steps, the compaction and 1 step", n)
			}
		}},
		{"ConflictAndReload", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "two"})
			b1, b2 := e.openMemory("two"), e.openMemory("two")
			e.add(b1, &agentmem.TaskStep{Task: "from b1"})
			before := e.dump()
			_, err := b2.Add(e.ctx, &agentmem.TaskStep{Task: "from b2"})
			e.wantErr(err, agentmem.ErrConflict, "Add by a memory that fell behind")
			if b2.Len() != 0 {
				t.Fatal("a conflicting add changed the memory")
			}
			e.wantUnchanged(before, "a conflicting add")
			if err := b2.Reload(e.ctx); err != nil {
				t.Fatal(err)
			}
			e.wantSameMemory(b2, b1, "reloaded memory")
			e.add(b2, &agentmem.TaskStep{Task: "from b2"})
			_, err = b1.Add(e.ctx, freshAction("b1 again"))
			e.wantErr(err, agentmem.ErrConflict, "Add by the other memory now")
			before = e.dump()
			e.wantErr(b1.Clear(e.ctx), agentmem.ErrConflict, "a compaction (Clear) by a memory that fell behind")
			e.wantUnchanged(before, "a conflicting compaction")
			if b1.Len() != 1 {
				t.Fatal("a conflicting Clear changed the memory")
			}
			e.wantSeqs(seqsOf(e.entries("two")), []int64{1, 2}, "log")
		}},
		{"ConcurrentBoundWriters", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "cc"})
			const writers, each = 3, 10
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					b, err := store.OpenMemory(e.ctx, e.st, "cc", e.memOptions())
					if err != nil {
						errs <- err
						return
					}
					for i := range each {
						step := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: fmt.Sprintf("w%d-%d", w, i)}, Task: "x"}
						for attempt := 0; ; attempt++ {
							_, err := b.Add(e.ctx, step)
							if err == nil {
								break
							}
							if !errors.Is(err, agentmem.ErrConflict) || attempt > 50*writers {
								errs <- err
								return
							}
							if err := b.Reload(e.ctx); err != nil {
								errs <- err
								return
							}
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			e.checkAllOnce("cc", writers, each)
		}},
		{"CrashResume", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "crash"})
			b := e.openMemory("crash")
			var acked []agentmem.StepInfo
			for i := range 4 {
				acked = append(acked, e.add(b, freshAction(fmt.Sprint(i))))
			}
			// The process dies: no Close. A new one opens the session.
			again := e.openMemory("crash")
			got := again.Steps()
			if len(got) != len(acked) {
				t.Fatalf("after a crash: %d steps, want the %d acknowledged", len(got), len(acked))
			}
			for i, st := range got {
				if st.Info().ID != acked[i].ID || st.Info().Number != acked[i].Number {
					t.Fatalf("step %d after a crash: %+v, want %+v", i, st.Info(), acked[i])
				}
			}
			// Adding a step that is already stored does not repeat it.
			dup := agentmem.CloneStep(got[3])
			_, err := again.Add(e.ctx, dup)
			e.wantErr(err, agentmem.ErrConflict, "re-adding a stored step")
			if again.Len() != 4 || len(e.entries("crash")) != 4 {
				t.Fatal("a re-added step was stored or shown twice")
			}
			e.add(again, freshAction("resumed"))
			e.wantSeqs(seqsOf(e.entries("crash")), seqRange(1, 5), "log after resuming")
			if _, err := b.Add(e.ctx, freshAction("from the dead")); !errors.Is(err, agentmem.ErrConflict) {
				t.Fatalf("the old memory's add after the new one wrote: %v", err)
			}
		}},
		{"Branch", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "trunk"})
			tb := e.openMemory("trunk")
			e.add(tb, &agentmem.TaskStep{Task: "shared"})
			e.add(tb, freshAction("shared"))
			br, err := store.CreateMemory(e.ctx, e.st, store.CreateRequest{ID: "alt", ParentID: "trunk"}, e.memOptions())
			if err != nil {
				t.Fatal(err)
			}
			e.wantSameMemory(br, tb, "new branch")
			e.add(br, freshAction("alt only"))
			e.add(tb, freshAction("trunk only"))
			if br.Len() != 3 || tb.Len() != 3 {
				t.Fatalf("branch %d steps, trunk %d", br.Len(), tb.Len())
			}
			e.wantSameMemory(e.openMemory("alt"), br, "reopened branch")
			e.wantSameMemory(e.openMemory("trunk"), tb, "reopened trunk")
		}},
		{"Errors", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "x"})
			opts := e.memOptions()
			opts.Journal = &nopJournal{}
			_, err := store.OpenMemory(e.ctx, e.st, "x", opts)
			e.wantErr(err, agentmem.ErrInvalid, "OpenMemory with a journal of its own")
			_, err = store.OpenMemory(e.ctx, e.st, "missing", e.memOptions())
			e.wantErr(err, agentmem.ErrNotFound, "OpenMemory of a missing session")
			_, err = store.OpenMemory(e.ctx, e.st, "x\n", e.memOptions())
			e.wantErr(err, agentmem.ErrInvalid, "OpenMemory with a bad ID")
			b := e.openMemory("x")
			if err := b.Close(e.ctx); err != nil {
				t.Fatal(err)
			}
			_, err = b.Add(e.ctx, freshAction("late"))
			e.wantErr(err, store.ErrClosed, "Add after Close")
			if err := b.Close(e.ctx); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			e.get("x") // not single-run: still there
		}},
	}
}

type nopJournal struct{}

func (nopJournal) Append(_ context.Context, s []agentmem.Step) ([]int, error) {
	return make([]int, len(s)), nil
}

func (nopJournal) Compact(context.Context, agentmem.JournalCompaction) ([]int, error) {
	return nil, nil
}
