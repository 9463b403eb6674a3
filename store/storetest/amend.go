package storetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
)

// Amendments: compaction records that keep the working set as it is and
// replace some of its steps by copies (CompactionRecord.Amend), as a tool
// result appended after its call, or a popped result, is recorded. Their
// copies apply on top of the newest full record's and of the amendments
// before them.

// pendingStep is an action whose calls (named id-1, id-2, ...) await
// their results.
func pendingStep(id string, calls int) *agentmem.ActionStep {
	a := &agentmem.ActionStep{StepInfo: info(id), ModelOutput: "calling for " + id}
	for i := range calls {
		a.ToolCalls = append(a.ToolCalls, agentmem.ToolCall{ID: callID(id, i+1), Name: "search", Arguments: `{"q":"x"}`})
	}
	return a
}

func callID(id string, i int) string { return id + "-" + string(rune('0'+i)) }

// answered returns a copy of the action at seq with results for its
// first n calls, numbered seq.
func answered(a *agentmem.ActionStep, seq int64, n int, result string) agentmem.Step {
	c := agentmem.CloneStep(a).(*agentmem.ActionStep)
	c.Results = nil
	for _, call := range a.ToolCalls[:n] {
		c.Results = append(c.Results, agentmem.ToolResult{CallID: call.ID, Content: result + " for " + call.ID})
	}
	return store.WithNumber(c, seq)
}

// amend appends an amendment carrying copies.
func (e *env) amend(id string, copies ...agentmem.Step) *store.AppendResponse {
	e.t.Helper()
	return e.append(store.AppendRequest{SessionID: id, Compaction: &store.CompactionRecord{Amend: true, Replaced: copies}})
}

// amendedSession is a session whose working set has two pending actions,
// p3 (two calls) and p5 (one), amended three times: p3's first call
// answered (6), p5 answered (7), p3's both calls answered (8); then a
// message (9). It returns the actions as appended.
func (e *env) amendedSession(id string) (p3, p5 *agentmem.ActionStep) {
	e.t.Helper()
	e.create(store.CreateRequest{ID: id})
	p3, p5 = pendingStep(id+"-p3", 2), pendingStep(id+"-p5", 1)
	e.appendSteps(id, systemStep(id+"-sys"), taskStep(id+"-task", "the task"), p3, messageStep(id+"-m4", "meanwhile"), p5)
	e.wantSeqs([]int64{e.amend(id, answered(p3, 3, 1, "first")).CompactionSeq}, []int64{6}, "the first amendment")
	e.amend(id, answered(p5, 5, 1, "only"))
	if r := e.amend(id, answered(p3, 3, 2, "both")); r.CompactionSeq != 8 || r.LastSeq != 8 || len(r.Seqs) != 0 {
		e.t.Fatalf("third amendment: %+v", r)
	}
	e.appendSteps(id, messageStep(id+"-m9", "next"))
	return p3, p5
}

func (s *suite) amendmentTests() []namedTest {
	return []namedTest{
		{"WorkingSet", func(t *testing.T) {
			e := s.open(t)
			p3, p5 := e.amendedSession("a")
			entries := e.entries("a")
			want := []string{e.numbered(systemStep("a-sys"), 1), e.numbered(taskStep("a-task", "the task"), 2),
				e.encode(answered(p3, 3, 2, "both")), e.numbered(messageStep("a-m4", "meanwhile"), 4),
				e.encode(answered(p5, 5, 1, "only")), e.numbered(messageStep("a-m9", "next"), 9)}
			resp := e.read(store.ReadRequest{SessionID: "a", WorkingSet: true})
			e.wantSteps(resp.Steps, want, "working set after three amendments")
			e.wantSeqs(resp.Replaced, []int64{3, 5}, "ReadResponse.Replaced")
			// The log keeps the amendments as they were written, and the
			// pending originals.
			for _, en := range entries[5:8] {
				if en.Kind != store.CompactionEntry || !en.Compaction.Amend || en.Compaction.Working != nil || len(en.Compaction.Replaced) != 1 {
					t.Fatalf("entry %d: %s", en.Seq, e.entryJSON(en))
				}
			}
			if orig := entries[2].Step.(*agentmem.ActionStep); !orig.Pending() {
				t.Fatalf("the log's original of step 3 changed: %s", e.entryJSON(entries[2]))
			}
			// Each prefix of the log has its own working set: as of 7, step
			// 3 had one result.
			if ws := store.WorkingSet(entries[:7]); e.encode(ws[2]) != e.encode(answered(p3, 3, 1, "first")) {
				t.Fatalf("working set as of 7: step 3 is %s", e.encode(ws[2]))
			}
		}},
		{"FullRecordAfterAmendments", func(t *testing.T) {
			// A full record (here a bound memory's prune, which sends the
			// copies ReadResponse.Replaced names again, and a pop) keeps
			// the amended copies; amendments after it apply on top.
			e := s.open(t)
			p3, p5 := e.amendedSession("f")
			b := e.openMemory("f")
			dropMessage := agentmem.StrategyFunc(func(_ context.Context, steps []agentmem.Step, _ *agentmem.Env) ([]agentmem.Step, error) {
				return slices.DeleteFunc(slices.Clone(steps), func(s agentmem.Step) bool { return s.Info().Number == 4 }), nil
			})
			if _, err := b.Prune(e.ctx, dropMessage); err != nil {
				t.Fatal(err)
			}
			entries := e.entries("f")
			if len(entries) != 10 {
				t.Fatalf("the log has %d entries after the prune, want 10", len(entries))
			}
			last := entries[9]
			if last.Kind != store.CompactionEntry || last.Compaction.Amend || !slices.Equal(last.Compaction.Working, []int64{1, 2, 3, 5, 9}) {
				t.Fatalf("the bound memory's record: %s", e.entryJSON(last))
			}
			want := []string{e.numbered(systemStep("f-sys"), 1), e.numbered(taskStep("f-task", "the task"), 2),
				e.encode(answered(p3, 3, 2, "both")), e.encode(answered(p5, 5, 1, "only")), e.numbered(messageStep("f-m9", "next"), 9)}
			e.wantSteps(e.workingSet("f"), want, "working set after a full record")
			e.wantStoreHoldsMemory(b, "after the prune")
			// An amendment after the full record, of a step it names.
			e.amend("f", answered(p5, 5, 1, "again"))
			want[3] = e.encode(answered(p5, 5, 1, "again"))
			e.wantSteps(e.workingSet("f"), want, "working set after an amendment on a full record")
			// Pop takes out the newest step with a full record: the copies
			// stay.
			if r, err := e.svc().Pop(e.ctx, sessions.PopRequest{SessionID: "f"}); err != nil || r.Seq != 9 {
				t.Fatalf("pop: %+v, %v", r, err)
			}
			e.wantSteps(e.workingSet("f"), want[:4], "working set after a pop")
			e.wantSeqs(e.read(store.ReadRequest{SessionID: "f", WorkingSet: true}).Replaced, []int64{3, 5}, "ReadResponse.Replaced after a pop")
		}},
		{"Refused", func(t *testing.T) {
			// An amendment's copies stand in for steps of the working set,
			// with their ID and kind; it has no working or removed list and
			// at least one copy. Anything else is refused, storing nothing.
			e := s.open(t)
			p3, _ := e.amendedSession("r")
			// A full record removing step 4.
			e.append(store.AppendRequest{SessionID: "r", Compaction: &store.CompactionRecord{Working: []int64{1, 2, 3, 5, 9},
				Replaced: []agentmem.Step{answered(p3, 3, 2, "both")}, Removed: []int64{4}}})
			before := e.dump()
			wrongID := answered(p3, 3, 1, "x").(*agentmem.ActionStep)
			wrongID.ID = "someone-else"
			for what, c := range map[string]*store.CompactionRecord{
				"a copy with another ID":              {Amend: true, Replaced: []agentmem.Step{wrongID}},
				"a copy of another kind":              {Amend: true, Replaced: []agentmem.Step{store.WithNumber(taskStep("r-p3", "t"), 3)}},
				"a copy of a step the record removed": {Amend: true, Replaced: []agentmem.Step{store.WithNumber(messageStep("r-m4", "changed"), 4)}},
				"a copy of a compaction entry":        {Amend: true, Replaced: []agentmem.Step{store.WithNumber(messageStep("r-x", "x"), 10)}},
				"a copy of no entry":                  {Amend: true, Replaced: []agentmem.Step{store.WithNumber(messageStep("r-x", "x"), 99)}},
				"a working list":                      {Amend: true, Working: []int64{1}, Replaced: []agentmem.Step{answered(p3, 3, 1, "x")}},
				"a removed list":                      {Amend: true, Removed: []int64{9}, Replaced: []agentmem.Step{answered(p3, 3, 1, "x")}},
				"no copy":                             {Amend: true},
				"two copies of one step":              {Amend: true, Replaced: []agentmem.Step{answered(p3, 3, 1, "x"), answered(p3, 3, 2, "y")}},
			} {
				_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "r", Compaction: c})
				e.wantErr(err, agentmem.ErrInvalid, "an amendment with "+what)
				e.wantUnchanged(before, "an amendment with "+what)
			}
			// Nor for a step of the same request: it has no number yet.
			_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "r", Steps: []agentmem.Step{messageStep("r-new", "n")},
				Compaction: &store.CompactionRecord{Amend: true, Replaced: []agentmem.Step{store.WithNumber(messageStep("r-new", "m"), 11)}}})
			e.wantErr(err, agentmem.ErrInvalid, "an amendment of the request's own step")
			e.wantUnchanged(before, "an amendment of the request's own step")
			// A retry of an amendment with its step is answered; the same
			// steps with another amendment reuse the IDs.
			req := store.AppendRequest{SessionID: "r", Steps: []agentmem.Step{messageStep("r-k", "k")},
				Compaction: &store.CompactionRecord{Amend: true, Replaced: []agentmem.Step{answered(p3, 3, 1, "retried")}}}
			first := e.append(req)
			if again := e.append(req); again.CompactionSeq != first.CompactionSeq || again.LastSeq != first.LastSeq {
				t.Fatalf("retry: %+v, first %+v", again, first)
			}
			req.Compaction = &store.CompactionRecord{Amend: true, Replaced: []agentmem.Step{answered(p3, 3, 2, "retried")}}
			_, err = e.st.Append(e.ctx, req)
			e.wantErr(err, store.ErrIDReused, "the same steps with another amendment")
		}},
		{"Branches", func(t *testing.T) {
			// A branch sees the amendments up to its fork point, not the
			// parent's later ones, and amends inherited steps on its own.
			e := s.open(t)
			p3, p5 := e.amendedSession("p")
			e.create(store.CreateRequest{ID: "b", ParentID: "p", ForkSeq: 6})
			ws := e.workingSet("b")
			if len(ws) != 5 || e.encode(ws[2]) != e.encode(answered(p3, 3, 1, "first")) || e.encode(ws[4]) != e.numbered(p5, 5) {
				t.Fatalf("the branch's working set: %s", e.stepsJSON(ws))
			}
			e.amend("b", answered(p5, 5, 1, "branch"))
			if got := e.workingSet("b")[4]; e.encode(got) != e.encode(answered(p5, 5, 1, "branch")) {
				t.Fatalf("the branch's amendment: %s", e.encode(got))
			}
			if got := e.workingSet("p")[4]; e.encode(got) != e.encode(answered(p5, 5, 1, "only")) {
				t.Fatalf("the parent after the branch's amendment: %s", e.encode(got))
			}
		}},
		{"PruneKeepsAmendedSteps", func(t *testing.T) {
			e := s.open(t)
			// Only amendments: every step is in the working set.
			e.amendedSession("only")
			// A full record that removed step 4, then amendments of a step
			// it names (3) and of one after it (11).
			p3, _ := e.amendedSession("full")
			e.append(store.AppendRequest{SessionID: "full", Compaction: &store.CompactionRecord{Working: []int64{1, 2, 3, 5, 9}, Removed: []int64{4}}})
			p11 := pendingStep("full-p11", 1)
			e.appendSteps("full", p11)
			e.amend("full", answered(p3, 3, 2, "after"), answered(p11, 11, 1, "late"))
			before := map[string]string{"only": e.stepsJSON(e.workingSet("only")), "full": e.stepsJSON(e.workingSet("full"))}
			e.clock.Advance(time.Hour)
			resp, err := e.st.Prune(e.ctx, store.PruneRequest{CoveredBefore: e.clock.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if resp.EntriesDeleted != 1 {
				t.Fatalf("Prune deleted %d entries, want step 4 of full only", resp.EntriesDeleted)
			}
			for id, ws := range before {
				if got := e.stepsJSON(e.workingSet(id)); got != ws {
					t.Fatalf("%s: working set after Prune\n%s\nwant\n%s", id, got, ws)
				}
			}
			if seqs := seqsOf(e.entries("full")); slices.Contains(seqs, 4) || !slices.Contains(seqs, 3) {
				t.Fatalf("full's log after Prune: %v", seqs)
			}
		}},
		{"ExportImport", func(t *testing.T) {
			e := s.open(t)
			e.importer()
			p3, _ := e.amendedSession("x")
			e.append(store.AppendRequest{SessionID: "x", Compaction: &store.CompactionRecord{Working: []int64{1, 2, 3, 5, 9}, Removed: []int64{4}}})
			e.amend("x", answered(p3, 3, 1, "last"))
			out := e.export("x")
			if n := strings.Count(out, `"compaction":{"amend":true,`); n != 4 {
				t.Fatalf("the export has %d amendments, want 4:\n%s", n, out)
			}
			dst := e.another()
			if _, err := dst.importString(out, store.ImportOptions{}); err != nil {
				t.Fatalf("Import: %v", err)
			}
			if g, w := dst.entriesJSON(dst.entries("x")), e.entriesJSON(e.entries("x")); g != w {
				t.Fatalf("imported log\n%s\nwant\n%s", g, w)
			}
			if g, w := dst.stepsJSON(dst.workingSet("x")), e.stepsJSON(e.workingSet("x")); g != w {
				t.Fatalf("imported working set\n%s\nwant\n%s", g, w)
			}
			if again := dst.export("x"); again != out {
				t.Fatalf("export of the imported session differs:\n%s\nwant\n%s", again, out)
			}
			// An export whose amendment names a step the working set no
			// longer has (4) is refused.
			const of3, of4 = `"compaction":{"amend":true,"replaced":[{"type":"action","number":3,`, `"compaction":{"amend":true,"replaced":[{"type":"action","number":4,`
			i := strings.LastIndex(out, of3)
			if i < 0 {
				t.Fatal("the export has no amendment of step 3 to corrupt")
			}
			bad := out[:i] + of4 + out[i+len(of3):]
			other := e.another()
			_, err := other.importString(bad, store.ImportOptions{})
			e.wantErr(err, agentmem.ErrInvalid, "an import with an amendment of a step outside the working set")
		}},
	}
}
