package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// compacted is a session with a summary and a truncated copy:
//
//	1 system, 2 task, 3 action, 4 action, 5 action,
//	6 summary of 3-4, 7 compaction {working: [1 2 6 5], replaced: [5'], removed: [3 4]}
type compacted struct {
	id    string
	steps map[int64]agentmem.Step // by seq, as appended
	copy5 agentmem.Step           // the truncated copy of step 5
	resp  *store.AppendResponse   // of the compaction
}

func (e *env) compactedSession(id string) *compacted {
	e.t.Helper()
	c := &compacted{id: id, steps: map[int64]agentmem.Step{}}
	e.create(store.CreateRequest{ID: id})
	first := []agentmem.Step{systemStep(id + "-sys"), taskStep(id+"-task", "the task"), actionStep(id + "-a3"), actionStep(id + "-a4"), actionStep(id + "-a5")}
	for i, seq := range e.appendSteps(id, first...) {
		c.steps[seq] = first[i]
	}
	e.clock.Advance(time.Minute)
	sum := summaryStep(id+"-sum", "steps 3 and 4 searched twice", agentmem.Range{From: 3, To: 4})
	c.copy5 = store.WithNumber(first[4].(*agentmem.ActionStep).Truncate(10), 5)
	c.resp = e.append(store.AppendRequest{
		SessionID: id,
		Steps:     []agentmem.Step{sum},
		Compaction: &store.CompactionRecord{
			Working:  []int64{1, 2, store.NewStepRef(0), 5},
			Replaced: []agentmem.Step{c.copy5},
			Removed:  []int64{3, 4},
		},
		ExpectedLastSeq: ptr(int64(5)),
	})
	c.steps[6] = sum
	return c
}

func (s *suite) compactionTests() []namedTest {
	return []namedTest{
		{"RecordAndWorkingSet", func(t *testing.T) {
			e := s.open(t)
			c := e.compactedSession("c")
			e.wantSeqs(c.resp.Seqs, []int64{6}, "summary step")
			if c.resp.CompactionSeq != 7 || c.resp.LastSeq != 7 {
				t.Fatalf("compaction append: %+v", c.resp)
			}
			e.clock.Advance(time.Minute)
			a8 := actionStep("c-a8")
			e.wantSeqs(e.appendSteps("c", a8), []int64{8}, "step after the compaction")

			resp := e.read(store.ReadRequest{SessionID: "c", WorkingSet: true})
			want := []string{e.numbered(c.steps[1], 1), e.numbered(c.steps[2], 2), e.numbered(c.steps[6], 6), e.encode(c.copy5), e.numbered(a8, 8)}
			e.wantSteps(resp.Steps, want, "working set")
			e.wantSeqs(resp.Replaced, []int64{5}, "ReadResponse.Replaced")

			// The log keeps everything, the covered originals included.
			entries := e.entries("c")
			e.wantSeqs(seqsOf(entries), seqRange(1, 8), "log")
			for _, seq := range []int64{3, 4, 5} {
				if got := e.encode(entries[seq-1].Step); got != e.numbered(c.steps[seq], seq) {
					t.Fatalf("original step %d after the compaction: %s", seq, got)
				}
			}
			rec := entries[6]
			if rec.Kind != store.CompactionEntry || rec.Step != nil {
				t.Fatalf("entry 7: %+v", rec)
			}
			e.wantTime(rec.Time, Epoch.Add(time.Minute), "compaction entry time")
			wantRec, _ := store.EncodeCompaction(&store.CompactionRecord{Working: []int64{1, 2, 6, 5}, Replaced: []agentmem.Step{c.copy5}, Removed: []int64{3, 4}})
			if got, _ := store.EncodeCompaction(rec.Compaction); string(got) != string(wantRec) {
				t.Fatalf("stored compaction record\n%s\nwant (new-step references resolved)\n%s", got, wantRec)
			}
			// The package's helper agrees with the backend.
			e.wantSteps(store.WorkingSet(entries), want, "store.WorkingSet over the log")
			e.wantSeqs(store.ReplacedSeqs(entries), []int64{5}, "store.ReplacedSeqs over the log")
			// Last reads the compaction entry like any other.
			e.wantSeqs(seqsOf(e.read(store.ReadRequest{SessionID: "c", Last: 2}).Entries), []int64{7, 8}, "Last 2")
		}},
		{"NewestCompactionWins", func(t *testing.T) {
			e := s.open(t)
			c := e.compactedSession("n")
			a8 := actionStep("n-a8")
			e.appendSteps("n", a8)
			sum2 := summaryStep("n-sum2", "everything so far", agentmem.Range{From: 3, To: 5})
			resp := e.append(store.AppendRequest{SessionID: "n", Steps: []agentmem.Step{sum2}, Compaction: &store.CompactionRecord{
				Working: []int64{1, 2, store.NewStepRef(0), 8}, Removed: []int64{6, 5},
			}})
			if resp.Seqs[0] != 9 || resp.CompactionSeq != 10 {
				t.Fatalf("second compaction: %+v", resp)
			}
			want := []string{e.numbered(c.steps[1], 1), e.numbered(c.steps[2], 2), e.numbered(sum2, 9), e.numbered(a8, 8)}
			got := e.read(store.ReadRequest{SessionID: "n", WorkingSet: true})
			e.wantSteps(got.Steps, want, "working set after a second compaction")
			if len(got.Replaced) != 0 {
				t.Fatalf("Replaced %v after a compaction without copies", got.Replaced)
			}
			// Only the newest record's copies apply: naming step 5 again
			// without its copy brings the original back.
			e.append(store.AppendRequest{SessionID: "n", Compaction: &store.CompactionRecord{Working: []int64{1, 2, 5}}})
			e.wantSteps(e.workingSet("n"), []string{e.numbered(c.steps[1], 1), e.numbered(c.steps[2], 2), e.numbered(c.steps[5], 5)}, "working set naming an original")
		}},
		{"EmptyWorkingSet", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "e"})
			e.appendSteps("e", steps("old", 3)...)
			resp := e.append(store.AppendRequest{SessionID: "e", Compaction: &store.CompactionRecord{Working: []int64{}, Removed: []int64{1, 2, 3}}})
			if len(resp.Seqs) != 0 || resp.CompactionSeq != 4 || resp.LastSeq != 4 {
				t.Fatalf("compaction without steps: %+v", resp)
			}
			if ws := e.workingSet("e"); len(ws) != 0 {
				t.Fatalf("working set after clearing: %d steps", len(ws))
			}
			late := taskStep("late", "after the clear")
			e.appendSteps("e", late)
			e.wantSteps(e.workingSet("e"), []string{e.numbered(late, 5)}, "working set after clear and add")
		}},
		{"Retry", func(t *testing.T) {
			e := s.open(t)
			c := e.compactedSession("r")
			before := e.dump()
			again := e.append(store.AppendRequest{
				SessionID: "r", Steps: []agentmem.Step{c.steps[6]},
				Compaction:      &store.CompactionRecord{Working: []int64{1, 2, store.NewStepRef(0), 5}, Replaced: []agentmem.Step{c.copy5}, Removed: []int64{3, 4}},
				ExpectedLastSeq: ptr(int64(5)),
			})
			if !slices.Equal(again.Seqs, c.resp.Seqs) || again.CompactionSeq != c.resp.CompactionSeq || again.LastSeq != c.resp.LastSeq {
				t.Fatalf("retried compaction returned %+v, the first try %+v", again, c.resp)
			}
			e.wantUnchanged(before, "a retried compaction")
		}},
		{"RetryWithOtherCompaction", func(t *testing.T) {
			e := s.open(t)
			c := e.compactedSession("r")
			before := e.dump()
			for what, rec := range map[string]*store.CompactionRecord{
				"other working set": {Working: []int64{1, 2, store.NewStepRef(0)}, Removed: []int64{3, 4, 5}},
				"no copy":           {Working: []int64{1, 2, store.NewStepRef(0), 5}, Removed: []int64{3, 4}},
				"other removed":     {Working: []int64{1, 2, store.NewStepRef(0), 5}, Replaced: []agentmem.Step{c.copy5}, Removed: []int64{3}},
			} {
				_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "r", Steps: []agentmem.Step{c.steps[6]}, Compaction: rec})
				e.wantErr(err, store.ErrIDReused, "a retry of a compaction's steps with "+what)
				e.wantErr(err, agentmem.ErrConflict, "a retry of a compaction's steps with "+what)
				e.wantUnchanged(before, "a retry with "+what)
			}
			// A retry of the steps alone cannot tell the compaction after
			// them from one appended on its own: it passes.
			again := e.append(store.AppendRequest{SessionID: "r", Steps: []agentmem.Step{c.steps[6]}})
			if !slices.Equal(again.Seqs, c.resp.Seqs) || again.CompactionSeq != 0 {
				t.Fatalf("retry of the steps without the compaction: %+v", again)
			}
			// Steps stored without a compaction, sent again with one.
			plain := actionStep("r-plain")
			e.appendSteps("r", plain)
			before = e.dump()
			_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "r", Steps: []agentmem.Step{plain},
				Compaction: &store.CompactionRecord{Working: []int64{1, 2, store.NewStepRef(0)}}})
			e.wantErr(err, store.ErrIDReused, "steps stored without a compaction, sent again with one")
			e.wantUnchanged(before, "a compaction added to a retry")
		}},
		{"StoredAndNewSteps", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "m"})
			old := taskStep("m-old", "stored before")
			e.appendSteps("m", old, actionStep("m-2"))
			before := e.dump()
			// A request whose steps are partly stored is no retry, with a
			// compaction as without.
			fresh := summaryStep("m-sum", "new")
			_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "m", Steps: []agentmem.Step{old, fresh}, Compaction: &store.CompactionRecord{
				Working: []int64{store.NewStepRef(0), store.NewStepRef(1)}, Removed: []int64{2},
			}})
			e.wantErr(err, store.ErrIDReused, "a compaction with a stored and a new step")
			e.wantUnchanged(before, "a compaction with a stored and a new step")
		}},
	}
}

// pinnedSession is a session whose working set has pinned steps in the
// middle of the log, after a clear and a compaction:
//
//	1 task (cleared), 2 clear {working: [], removed: [1]},
//	3 system, 4 task, 5 action, 6 task (a second task: not pinned), 7 system,
//	8 compaction {working: [3 4 6 7]}, 9 action
func (e *env) pinnedSession(id string) {
	e.t.Helper()
	e.create(store.CreateRequest{ID: id})
	e.appendSteps(id, taskStep(id+"-t1", "before the clear"))
	e.append(store.AppendRequest{SessionID: id, Compaction: &store.CompactionRecord{Working: []int64{}, Removed: []int64{1}}})
	e.appendSteps(id, systemStep(id+"-s3"), taskStep(id+"-t4", "the task"), actionStep(id+"-a5"), taskStep(id+"-t6", "a follow-up"), systemStep(id+"-s7"))
	e.append(store.AppendRequest{SessionID: id, Compaction: &store.CompactionRecord{Working: []int64{3, 4, 6, 7}, Removed: []int64{5}}})
	e.appendSteps(id, actionStep(id+"-a9"))
}

func (s *suite) pinnedTests() []namedTest {
	return []namedTest{
		{"KeepsPinned", func(t *testing.T) {
			e := s.open(t)
			e.pinnedSession("p")
			before := e.dump()
			// The pinned steps are every system prompt and the first task
			// of the working set: 3, 4 and 7 (1 was cleared, 6 is not the
			// first task).
			for _, working := range [][]int64{{4, 6, 7, 9}, {3, 6, 7, 9}, {3, 4, 6, 9}, {9}, {6}} {
				_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "p", Compaction: &store.CompactionRecord{Working: working}})
				e.wantErr(err, agentmem.ErrInvalid, fmt.Sprintf("a compaction to %v, without a pinned step", working))
				var inv *agentmem.InvalidError
				if !errors.As(err, &inv) || inv.Field != "compaction.working" {
					t.Fatalf("a compaction without a pinned step: %v, want an *agentmem.InvalidError for compaction.working", err)
				}
				e.wantUnchanged(before, "a compaction dropping a pinned step")
			}
			// The same with new steps: a summary in place of the rest.
			sum := summaryStep("p-sum", "the follow-up", agentmem.Range{From: 5, To: 9})
			_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "p", Steps: []agentmem.Step{sum},
				Compaction: &store.CompactionRecord{Working: []int64{3, store.NewStepRef(0)}}})
			e.wantErr(err, agentmem.ErrInvalid, "a summary compaction dropping the task")
			e.wantUnchanged(before, "a summary compaction dropping the task")
			// A pinned step named in the removed list leaves on purpose.
			e.append(store.AppendRequest{SessionID: "p", Compaction: &store.CompactionRecord{Working: []int64{3, 4, 6, 9}, Removed: []int64{7}}})
			e.append(store.AppendRequest{SessionID: "p", Compaction: &store.CompactionRecord{Working: []int64{3, 4, 6, 7, 9}}})
			// Keeping 3, 4 and 7 is enough; the second task may go.
			resp := e.append(store.AppendRequest{SessionID: "p", Steps: []agentmem.Step{sum},
				Compaction: &store.CompactionRecord{Working: []int64{3, 4, 7, store.NewStepRef(0)}, Removed: []int64{6, 9}}})
			e.wantSeqs(resp.Seqs, []int64{12}, "summary")
			if got := len(e.workingSet("p")); got != 4 {
				t.Fatalf("working set after a compaction keeping the pinned steps: %d steps, want 4", got)
			}
		}},
		{"NewPinnedSteps", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "n"})
			e.appendSteps("n", actionStep("n-a1"))
			before := e.dump()
			// The steps of the request count: a compaction leaving out a
			// system prompt or the first task it appends is refused.
			for what, st := range map[string]agentmem.Step{"system prompt": systemStep("n-s"), "task": taskStep("n-t", "new")} {
				_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "n", Steps: []agentmem.Step{st}, Compaction: &store.CompactionRecord{Working: []int64{1}}})
				e.wantErr(err, agentmem.ErrInvalid, "a compaction leaving out the "+what+" its request appends")
				e.wantUnchanged(before, "a compaction leaving out a new "+what)
			}
			resp := e.append(store.AppendRequest{SessionID: "n", Steps: []agentmem.Step{taskStep("n-t", "new")},
				Compaction: &store.CompactionRecord{Working: []int64{store.NewStepRef(0)}, Removed: []int64{1}}})
			if resp.CompactionSeq != 3 {
				t.Fatalf("compaction keeping its new task: %+v", resp)
			}
		}},
		{"CopyStandsIn", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "c"})
			task := taskStep("c-task", strings.Repeat("a long task ", 20))
			e.appendSteps("c", systemStep("c-sys"), task, actionStep("c-a3"))
			short := store.WithNumber(taskStep("c-task", "a long task"), 2)
			e.append(store.AppendRequest{SessionID: "c", Compaction: &store.CompactionRecord{
				Working: []int64{1, 2}, Replaced: []agentmem.Step{short}, Removed: []int64{3},
			}})
			e.wantSteps(e.workingSet("c"), []string{e.numbered(systemStep("c-sys"), 1), e.encode(short)}, "working set with a copy of the task")
		}},
		{"ClearDropsAll", func(t *testing.T) {
			e := s.open(t)
			e.pinnedSession("c")
			// An empty working list alone would drop the pinned steps.
			before := e.dump()
			_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "c", Compaction: &store.CompactionRecord{Working: []int64{}, Removed: []int64{6, 9}}})
			e.wantErr(err, agentmem.ErrInvalid, "an empty working set that does not remove the pinned steps")
			e.wantUnchanged(before, "a refused clear")
			// Removing every step clears the session, pinned steps and all
			// (as agentmem.Memory.Clear records it).
			e.append(store.AppendRequest{SessionID: "c", Compaction: &store.CompactionRecord{Working: []int64{}, Removed: []int64{3, 4, 6, 7, 9}}})
			if ws := e.workingSet("c"); len(ws) != 0 {
				t.Fatalf("working set after a clear: %d steps", len(ws))
			}
		}},
		{"InheritedPinned", func(t *testing.T) {
			e := s.open(t)
			e.pinnedSession("p")
			e.create(store.CreateRequest{ID: "b", ParentID: "p"})
			e.appendSteps("b", actionStep("b-a10"))
			before := e.dump()
			_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "b", Compaction: &store.CompactionRecord{Working: []int64{3, 4, 10}}})
			e.wantErr(err, agentmem.ErrInvalid, "a branch's compaction leaving out an inherited system prompt")
			e.wantUnchanged(before, "a branch's compaction leaving out an inherited system prompt")
			e.append(store.AppendRequest{SessionID: "b", Compaction: &store.CompactionRecord{Working: []int64{3, 4, 7, 10}}})
		}},
	}
}
