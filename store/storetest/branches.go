package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// parentWith5 creates session id with five action steps, seqs 1-5.
func (e *env) parentWith5(id string) []agentmem.Step {
	e.t.Helper()
	e.create(store.CreateRequest{ID: id, Agent: "parent"})
	ss := steps(id, 5)
	e.appendSteps(id, ss...)
	return ss
}

// wantLog checks a session's whole log: the step of each entry, by JSON.
func (e *env) wantLog(id string, want []string, what string) {
	e.t.Helper()
	var got []agentmem.Step
	for _, en := range e.entries(id) {
		if en.Kind != store.StepEntry {
			e.t.Fatalf("%s: unexpected %s entry %d", what, en.Kind, en.Seq)
		}
		got = append(got, en.Step)
	}
	e.wantSteps(got, want, what)
}

func (s *suite) branchTests() []namedTest {
	return []namedTest{
		{"Segments", func(t *testing.T) {
			e := s.open(t)
			if !e.st.Supports(store.CanSegment) {
				t.Skip("the store does not implement store.Segmenter")
			}
			sg := e.st
			segs := func(id string) string {
				t.Helper()
				got, err := sg.Segments(e.ctx, "", id)
				if err != nil {
					t.Fatalf("Segments(%s): %v", id, err)
				}
				return fmt.Sprint(got)
			}
			e.create(store.CreateRequest{ID: "g"})
			e.appendSteps("g", steps("g", 3)...)
			e.create(store.CreateRequest{ID: "p", ParentID: "g", ForkSeq: 2})
			e.appendSteps("p", steps("p", 3)...) // seqs 3-5
			e.create(store.CreateRequest{ID: "b", ParentID: "p", ForkSeq: 4})
			e.appendSteps("b", steps("b", 1)...) // seq 5
			e.create(store.CreateRequest{ID: "c", ParentID: "b", ForkSeq: 1})
			for id, want := range map[string]string{
				"g": "[{g 0 0}]",
				"p": "[{p 2 0} {g 0 2}]",
				"b": "[{b 4 0} {p 2 4} {g 0 2}]",
				"c": "[{c 1 0} {g 0 1}]", // forked inside what b inherits from g
			} {
				if got := segs(id); got != want {
					t.Errorf("Segments(%s) = %s, want %s", id, got, want)
				}
			}
			// Deleting p hands its own part of b's history to b.
			if err := e.st.Delete(e.ctx, "", "p"); err != nil {
				t.Fatal(err)
			}
			if got, want := segs("b"), "[{b 2 0} {g 0 2}]"; got != want {
				t.Errorf("Segments(b) after p's deletion = %s, want %s", got, want)
			}
			if _, err := sg.Segments(e.ctx, "", "p"); !errors.Is(err, agentmem.ErrNotFound) {
				t.Errorf("Segments of a deleted session: %v, want ErrNotFound", err)
			}
			if _, err := sg.Segments(e.ctx, "other-tenant", "g"); !errors.Is(err, agentmem.ErrNotFound) {
				t.Errorf("Segments in another tenant: %v, want ErrNotFound", err)
			}
		}},
		{"SeesParentUpToFork", func(t *testing.T) {
			e := s.open(t)
			ps := e.parentWith5("p")
			e.clock.Advance(time.Hour)
			b := e.create(store.CreateRequest{ID: "b", ParentID: "p", ForkSeq: 3, Agent: "branch"})
			if b.ParentID != "p" || b.ForkSeq != 3 || b.LastSeq != 3 || b.Agent != "branch" {
				t.Fatalf("branch: %s", sessionLine(b))
			}
			e.wantTime(b.CreatedAt, Epoch.Add(time.Hour), "branch CreatedAt")
			inherited := []string{e.numbered(ps[0], 1), e.numbered(ps[1], 2), e.numbered(ps[2], 3)}
			e.wantLog("b", inherited, "branch log before any write")
			e.wantSteps(e.workingSet("b"), inherited, "branch working set before any write")
			for _, en := range e.entries("b") {
				e.wantTime(en.Time, Epoch, "inherited entry time")
			}

			// Writes to either side never leak into the other.
			bs := taskStep("b-own", "only in the branch")
			e.wantSeqs(e.appendSteps("b", bs), []int64{4}, "first append to the branch")
			p6 := taskStep("p-6", "only in the parent")
			e.wantSeqs(e.appendSteps("p", p6), []int64{6}, "append to the parent")
			e.wantLog("b", append(inherited, e.numbered(bs, 4)), "branch log")
			var parentLog []string
			for i, st := range ps {
				parentLog = append(parentLog, e.numbered(st, int64(i+1)))
			}
			e.wantLog("p", append(parentLog, e.numbered(p6, 6)), "parent log")
			e.wantSeqs(seqsOf(e.read(store.ReadRequest{SessionID: "b", After: 2}).Entries), []int64{3, 4}, "branch read after 2")
			e.wantSeqs(seqsOf(e.read(store.ReadRequest{SessionID: "b", Last: 1}).Entries), []int64{4}, "branch last 1")
			if got := e.get("b").LastSeq; got != 4 {
				t.Fatalf("branch LastSeq %d, want 4", got)
			}
			if got := e.get("p").LastSeq; got != 6 {
				t.Fatalf("parent LastSeq %d, want 6", got)
			}
		}},
		{"ForkPoint", func(t *testing.T) {
			e := s.open(t)
			e.parentWith5("p")
			whole := e.create(store.CreateRequest{ID: "whole", ParentID: "p"})
			if whole.ForkSeq != 5 || whole.LastSeq != 5 {
				t.Fatalf("ForkSeq 0 should mean the parent's LastSeq: %s", sessionLine(whole))
			}
			e.wantSeqs(seqsOf(e.entries("whole")), seqRange(1, 5), "branch at the end")
			first := e.create(store.CreateRequest{ID: "first", ParentID: "p", ForkSeq: 1})
			if first.LastSeq != 1 {
				t.Fatalf("branch at 1: %s", sessionLine(first))
			}
			before := e.dump()
			_, err := e.st.Create(e.ctx, store.CreateRequest{ID: "late", ParentID: "p", ForkSeq: 6})
			e.wantErr(err, agentmem.ErrInvalid, "fork after the parent's LastSeq")
			_, err = e.st.Create(e.ctx, store.CreateRequest{ID: "neg", ParentID: "p", ForkSeq: -1})
			e.wantErr(err, agentmem.ErrInvalid, "negative fork point")
			_, err = e.st.Create(e.ctx, store.CreateRequest{ID: "orphan", ParentID: "nobody"})
			e.wantErr(err, agentmem.ErrNotFound, "branch of a missing session")
			_, err = e.st.Create(e.ctx, store.CreateRequest{ID: "nofork", ForkSeq: 2})
			e.wantErr(err, agentmem.ErrInvalid, "fork point without a parent")
			e.wantUnchanged(before, "refused branches")
			e.create(store.CreateRequest{ID: "empty"})
			eb := e.create(store.CreateRequest{ID: "empty-branch", ParentID: "empty"})
			if eb.LastSeq != 0 {
				t.Fatalf("branch of an empty session: %s", sessionLine(eb))
			}
			e.wantSeqs(e.appendSteps("empty-branch", steps("eb", 1)...), []int64{1}, "append to a branch of an empty session")
		}},
		{"BranchOfBranch", func(t *testing.T) {
			e := s.open(t)
			ps := e.parentWith5("p")
			e.create(store.CreateRequest{ID: "b", ParentID: "p", ForkSeq: 3})
			b4, b5 := taskStep("b4", "b"), taskStep("b5", "b")
			e.appendSteps("b", b4, b5)
			c := e.create(store.CreateRequest{ID: "c", ParentID: "b", ForkSeq: 4})
			if c.LastSeq != 4 {
				t.Fatalf("branch of a branch: %s", sessionLine(c))
			}
			c5 := taskStep("c5", "c")
			e.appendSteps("c", c5)
			e.wantLog("c", []string{e.numbered(ps[0], 1), e.numbered(ps[1], 2), e.numbered(ps[2], 3), e.numbered(b4, 4), e.numbered(c5, 5)}, "grandchild log")
			e.wantLog("b", []string{e.numbered(ps[0], 1), e.numbered(ps[1], 2), e.numbered(ps[2], 3), e.numbered(b4, 4), e.numbered(b5, 5)}, "child log")
		}},
		{"IdempotencyAcrossFork", func(t *testing.T) {
			e := s.open(t)
			ps := e.parentWith5("p")
			e.create(store.CreateRequest{ID: "b", ParentID: "p", ForkSeq: 3})
			// A step the branch inherited is already in its log.
			e.wantSeqs(e.appendSteps("b", ps[1]), []int64{2}, "inherited step appended to the branch")
			if got := e.get("b").LastSeq; got != 3 {
				t.Fatalf("a retry of an inherited step stored it again: LastSeq %d", got)
			}
			// A step of the parent after the fork is not in the branch.
			e.wantSeqs(e.appendSteps("b", ps[4]), []int64{4}, "parent's later step appended to the branch")
			// And the branch's step is not in the parent.
			bs := taskStep("b-only", "x")
			e.appendSteps("b", bs)
			e.wantSeqs(e.appendSteps("p", bs), []int64{6}, "branch's step appended to the parent")
		}},
		{"WorkingSetInherited", func(t *testing.T) {
			e := s.open(t)
			c := e.compactedSession("p") // 1-5 steps, 6 summary, 7 compaction
			early := e.create(store.CreateRequest{ID: "early", ParentID: "p", ForkSeq: 5})
			late := e.create(store.CreateRequest{ID: "late", ParentID: "p"})
			if early.LastSeq != 5 || late.LastSeq != 7 {
				t.Fatalf("branches: %s / %s", sessionLine(early), sessionLine(late))
			}
			var all5 []string
			for seq := int64(1); seq <= 5; seq++ {
				all5 = append(all5, e.numbered(c.steps[seq], seq))
			}
			e.wantSteps(e.workingSet("early"), all5, "working set of a branch forked before the compaction")
			compactedWS := []string{e.numbered(c.steps[1], 1), e.numbered(c.steps[2], 2), e.numbered(c.steps[6], 6), e.encode(c.copy5)}
			resp := e.read(store.ReadRequest{SessionID: "late", WorkingSet: true})
			e.wantSteps(resp.Steps, compactedWS, "working set of a branch forked after the compaction")
			e.wantSeqs(resp.Replaced, []int64{5}, "inherited Replaced")
			// A branch compacts its inherited steps without touching the parent.
			bsum := summaryStep("early-sum", "branch summary", agentmem.Range{From: 1, To: 4})
			e.append(store.AppendRequest{SessionID: "early", Steps: []agentmem.Step{bsum}, Compaction: &store.CompactionRecord{
				Working: []int64{1, 2, store.NewStepRef(0), 5}, Removed: []int64{3, 4},
			}})
			e.wantSteps(e.workingSet("early"), []string{all5[0], all5[1], e.numbered(bsum, 6), all5[4]}, "branch working set after its own compaction")
			e.wantSteps(e.workingSet("p"), compactedWS, "parent working set after the branch compacted")
		}},
		{"DeleteParentKeepsHistory", func(t *testing.T) {
			e := s.open(t)
			e.compactedSession("p")
			e.appendSteps("p", steps("p-late", 2)...) // 8, 9
			e.create(store.CreateRequest{ID: "b", ParentID: "p", ForkSeq: 8})
			e.appendSteps("b", steps("b", 2)...) // 9, 10
			e.create(store.CreateRequest{ID: "c", ParentID: "b", ForkSeq: 9})
			e.appendSteps("c", steps("c", 1)...) // 10
			e.create(store.CreateRequest{ID: "sib", ParentID: "p", ForkSeq: 2})
			view := func(id string) string {
				return e.entriesJSON(e.entries(id)) + "--\n" + e.stepsJSON(e.workingSet(id))
			}
			ids := []string{"b", "c", "sib"}
			before := map[string]string{}
			for _, id := range ids {
				before[id] = view(id)
			}
			bMeta := e.get("b")
			if err := e.st.Delete(e.ctx, "", "p"); err != nil {
				t.Fatalf("Delete parent: %v", err)
			}
			for _, id := range ids {
				if got := view(id); got != before[id] {
					t.Fatalf("deleting the parent changed branch %s:\nbefore:\n%s\nafter:\n%s", id, before[id], got)
				}
			}
			if got := e.get("b"); got.ParentID != "p" || got.ForkSeq != 8 || got.LastSeq != bMeta.LastSeq {
				t.Fatalf("branch after its parent was deleted: %s", sessionLine(got))
			}
			// A new session under the old ID is unrelated to the branches.
			e.clock.Advance(time.Second)
			e.create(store.CreateRequest{ID: "p"})
			e.appendSteps("p", steps("new-p", 3)...)
			for _, id := range ids {
				if view(id) != before[id] {
					t.Fatalf("a new session with the deleted parent's ID leaked into branch %s", id)
				}
			}
			// Deleting the middle of a chain keeps the grandchild whole.
			if err := e.st.Delete(e.ctx, "", "b"); err != nil {
				t.Fatal(err)
			}
			if view("c") != before["c"] {
				t.Fatal("deleting a branch changed its own branch")
			}
			e.wantSeqs(e.appendSteps("c", steps("c2", 1)...), []int64{11}, "append to the grandchild after deletions")
		}},
	}
}
