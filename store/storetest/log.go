package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

func (s *suite) appendTests() []namedTest {
	return []namedTest{
		{"SeqsFromOne", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "a"})
			e.clock.Advance(time.Minute)
			sys, task := systemStep("sys"), taskStep("task", "fix the bug")
			resp := e.append(store.AppendRequest{SessionID: "a", Steps: []agentmem.Step{sys, task}})
			e.wantSeqs(resp.Seqs, []int64{1, 2}, "first append")
			if resp.LastSeq != 2 || resp.CompactionSeq != 0 {
				t.Fatalf("AppendResponse %+v", resp)
			}
			e.clock.Advance(time.Minute)
			act := actionStep("act")
			e.wantSeqs(e.appendSteps("a", act), []int64{3}, "second append")
			got := e.get("a")
			if got.LastSeq != 3 {
				t.Fatalf("LastSeq %d, want 3", got.LastSeq)
			}
			e.wantTime(got.CreatedAt, Epoch, "CreatedAt")
			e.wantTime(got.UpdatedAt, Epoch.Add(2*time.Minute), "UpdatedAt after appends")
			entries := e.entries("a")
			e.wantSeqs(seqsOf(entries), []int64{1, 2, 3}, "Read")
			for i, want := range []struct {
				step agentmem.Step
				at   time.Time
			}{{sys, Epoch.Add(time.Minute)}, {task, Epoch.Add(time.Minute)}, {act, Epoch.Add(2 * time.Minute)}} {
				en := entries[i]
				if en.Kind != store.StepEntry || en.Compaction != nil {
					t.Fatalf("entry %d: kind %q", en.Seq, en.Kind)
				}
				e.wantTime(en.Time, want.at, fmt.Sprintf("entry %d time", en.Seq))
				if got, want := e.encode(en.Step), e.numbered(want.step, en.Seq); got != want {
					t.Fatalf("entry %d holds\n%s\nwant (the step's JSON, byte for byte, numbered by its seq)\n%s", en.Seq, got, want)
				}
			}
		}},
		{"SessionsAreSeparate", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "x"})
			e.create(store.CreateRequest{ID: "y"})
			e.wantSeqs(e.appendSteps("x", steps("x", 2)...), []int64{1, 2}, "x")
			e.wantSeqs(e.appendSteps("y", steps("y", 1)...), []int64{1}, "y")
			e.wantSeqs(e.appendSteps("x", steps("x2", 1)...), []int64{3}, "x again")
			if len(e.entries("y")) != 1 {
				t.Fatal("sessions share a log")
			}
			// The same step ID in two sessions is two steps.
			shared := taskStep("shared", "in both")
			e.wantSeqs(e.appendSteps("x", shared), []int64{4}, "shared step in x")
			e.wantSeqs(e.appendSteps("y", shared), []int64{2}, "shared step in y")
		}},
		{"MissingSession", func(t *testing.T) {
			e := s.open(t)
			_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "ghost", Steps: steps("g", 1)})
			e.wantErr(err, agentmem.ErrNotFound, "Append to a missing session")
		}},
		{"CopiesInAndOut", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "c"})
			act := actionStep("act")
			want := e.numbered(act, 1)
			e.appendSteps("c", act)
			// Change the step the caller passed in and the ones it got back.
			act.Results[0].Content = "changed by caller"
			act.Metadata["fixture"] = "changed"
			got := e.entries("c")[0].Step.(*agentmem.ActionStep)
			got.ToolCalls[0].Name = "changed via Read"
			got.Metadata["fixture"] = "changed via Read"
			ws := e.workingSet("c")[0].(*agentmem.ActionStep)
			ws.Results[0].Content = "changed via working set"
			if g := e.encode(e.entries("c")[0].Step); g != want {
				t.Fatalf("the store shares memory with its callers: it now holds\n%s", g)
			}
		}},
		{"EveryStepKind", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "k"})
			all := []agentmem.Step{
				systemStep("k-sys"),
				&agentmem.TaskStep{StepInfo: info("k-task"), Task: "look at this", Images: []agentmem.Image{{URL: "https://example.com/a.png", Detail: "low"}, {MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G', 0, 1, 2}}}},
				actionStep("k-act"),
				&agentmem.ActionStep{StepInfo: info("k-err"), Code: "print(1/0)", Observation: "Traceback…", Error: "ZeroDivisionError", IsFinal: false},
				&agentmem.PlanningStep{StepInfo: info("k-plan"), Plan: "1. look 2. fix", ModelOutput: "plan:", Usage: &agentmem.Usage{InputTokens: 3}},
				&agentmem.ScratchpadStep{StepInfo: info("k-pad"), Content: "note"},
				&agentmem.FinalAnswerStep{StepInfo: info("k-final"), Answer: "42"},
				summaryStep("k-sum", "earlier work", agentmem.Range{From: 1, To: 2}, agentmem.Range{From: 4, To: 4}),
				messageStep("k-msg", "hello"),
				&agentmem.MessageStep{StepInfo: info("k-agent"), Message: agentmem.Message{
					Role: agentmem.RoleAgentCall, Name: "planner", Content: agentmem.Text("please plan"),
					AgentCalls: []agentmem.AgentCall{{ID: "ac1", Agent: "planner", Request: "plan"}},
					Data:       []byte(`{"priority":1,"tags":["a","b"]}`), Metadata: map[string]string{"m": "v"},
					Time: stepTime.Add(time.Second),
				}},
				&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "k-bare"}, Task: ""},
			}
			var want []string
			for i, st := range all {
				want = append(want, e.numbered(st, int64(i+1)))
			}
			e.appendSteps("k", all...)
			var got []agentmem.Step
			for _, en := range e.entries("k") {
				got = append(got, en.Step)
			}
			e.wantSteps(got, want, "Read of every step kind")
			e.wantSteps(e.workingSet("k"), want, "working set of every step kind")
			for i, st := range got {
				if st.Kind() != all[i].Kind() {
					t.Fatalf("step %d came back as a %s, want %s", i+1, st.Kind(), all[i].Kind())
				}
			}
		}},
		{"StepAtSizeLimit", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "big"})
			step := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "big-1"}}
			step.Task = fillTo(store.MaxStepBytes - len(e.numbered(step, 1)))
			if n := len(e.numbered(step, 1)); n != store.MaxStepBytes {
				t.Fatalf("fixture: the step is %d bytes, want %d", n, store.MaxStepBytes)
			}
			want := e.numbered(step, 1)
			e.appendSteps("big", step)
			e.wantSteps(e.workingSet("big"), []string{want}, "a step of exactly MaxStepBytes")
		}},
	}
}

// fillTo returns a string of n ASCII letters (n >= 0).
func fillTo(n int) string {
	b := make([]byte, max(n, 0))
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return string(b)
}

func (s *suite) readTests() []namedTest {
	return []namedTest{
		{"Windows", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "r"})
			e.appendSteps("r", steps("r", 10)...)
			for _, c := range []struct {
				req  store.ReadRequest
				want []int64
			}{
				{store.ReadRequest{}, seqRange(1, 10)},
				{store.ReadRequest{After: 7}, []int64{8, 9, 10}},
				{store.ReadRequest{After: 10}, nil},
				{store.ReadRequest{After: 99}, nil},
				{store.ReadRequest{Limit: 3}, []int64{1, 2, 3}},
				{store.ReadRequest{After: 4, Limit: 2}, []int64{5, 6}},
				{store.ReadRequest{After: 8, Limit: 5}, []int64{9, 10}},
				{store.ReadRequest{Limit: 100}, seqRange(1, 10)},
				{store.ReadRequest{Last: 3}, []int64{8, 9, 10}},
				{store.ReadRequest{Last: 30}, seqRange(1, 10)},
				{store.ReadRequest{After: 5, Last: 2}, []int64{9, 10}},
				{store.ReadRequest{After: 8, Last: 5}, []int64{9, 10}},
			} {
				c.req.SessionID = "r"
				resp := e.read(c.req)
				e.wantSeqs(seqsOf(resp.Entries), c.want, fmt.Sprintf("Read(%+v)", c.req))
				if resp.Session == nil || resp.Session.ID != "r" || resp.Session.LastSeq != 10 {
					t.Fatalf("Read(%+v) returned session %+v", c.req, resp.Session)
				}
				if resp.Steps != nil {
					t.Fatalf("Read(%+v) returned a working set", c.req)
				}
			}
		}},
		{"EmptySession", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "empty"})
			if resp := e.read(store.ReadRequest{SessionID: "empty"}); len(resp.Entries) != 0 || resp.Session.LastSeq != 0 {
				t.Fatalf("Read of an empty session: %d entries", len(resp.Entries))
			}
			if ws := e.workingSet("empty"); len(ws) != 0 {
				t.Fatalf("working set of an empty session: %d steps", len(ws))
			}
		}},
		{"WorkingSetWithoutCompaction", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "w"})
			all := steps("w", 4)
			e.appendSteps("w", all...)
			var want []string
			for i, st := range all {
				want = append(want, e.numbered(st, int64(i+1)))
			}
			resp := e.read(store.ReadRequest{SessionID: "w", WorkingSet: true})
			e.wantSteps(resp.Steps, want, "working set with no compaction")
			if resp.Entries != nil || len(resp.Replaced) != 0 || resp.Session.LastSeq != 4 {
				t.Fatalf("working-set read: %d entries, replaced %v, session %+v", len(resp.Entries), resp.Replaced, resp.Session)
			}
		}},
		{"Invalid", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "r"})
			for _, req := range []store.ReadRequest{
				{SessionID: "r", After: -1},
				{SessionID: "r", Limit: -1},
				{SessionID: "r", Last: -1},
				{SessionID: "r", Limit: 1, Last: 1},
				{SessionID: "r", WorkingSet: true, Last: 2},
				{SessionID: "r", WorkingSet: true, After: 2},
				{SessionID: "r", WorkingSet: true, Limit: 2},
				{SessionID: ""},
				{SessionID: "r\n"},
			} {
				_, err := e.st.Read(e.ctx, req)
				e.wantErr(err, agentmem.ErrInvalid, fmt.Sprintf("Read(%+v)", req))
			}
			_, err := e.st.Read(e.ctx, store.ReadRequest{SessionID: "missing"})
			e.wantErr(err, agentmem.ErrNotFound, "Read of a missing session")
		}},
	}
}

func (s *suite) idempotencyTests() []namedTest {
	return []namedTest{
		{"SameStepTwice", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "i"})
			a := taskStep("a", "once")
			e.wantSeqs(e.appendSteps("i", a), []int64{1}, "first append")
			e.clock.Advance(time.Second)
			resp := e.append(store.AppendRequest{SessionID: "i", Steps: []agentmem.Step{a}})
			e.wantSeqs(resp.Seqs, []int64{1}, "the same step again")
			if resp.LastSeq != 1 || len(e.entries("i")) != 1 {
				t.Fatalf("a step appended twice is stored twice (LastSeq %d)", resp.LastSeq)
			}
			// A retry may carry another number and time: the log numbers
			// steps, and a server stamps a step sent without a time.
			hdr := a.Info()
			hdr.Number, hdr.Time = 7, stepTime.Add(time.Hour)
			e.wantSeqs(e.appendSteps("i", agentmem.WithInfo(a, hdr)), []int64{1}, "the same step with another number and time")
			e.wantTime(e.get("i").UpdatedAt, Epoch, "UpdatedAt after retries that stored nothing")
		}},
		{"SameIDOtherStep", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "i"})
			a := taskStep("a", "once")
			e.appendSteps("i", a)
			before := e.dump()
			otherMeta := taskStep("a", "once")
			otherMeta.Metadata = map[string]string{"fixture": "other"}
			for what, st := range map[string]agentmem.Step{
				"other content":  taskStep("a", "changed"),
				"other kind":     &agentmem.PlanningStep{StepInfo: info("a"), Plan: "once"},
				"other metadata": otherMeta,
			} {
				// Whatever ExpectedLastSeq says: a retry would pass it.
				for _, exp := range []*int64{nil, ptr(int64(1)), ptr(int64(0))} {
					_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "i", Steps: []agentmem.Step{st}, ExpectedLastSeq: exp})
					e.wantErr(err, store.ErrIDReused, "a step with a stored step's ID and "+what)
					e.wantErr(err, agentmem.ErrConflict, "a step with a stored step's ID and "+what)
					e.wantUnchanged(before, "an append reusing a step ID")
				}
			}
		}},
		{"RetriedBatch", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "i"})
			e.appendSteps("i", steps("pre", 2)...)
			batch := steps("b", 3)
			first := e.append(store.AppendRequest{SessionID: "i", Steps: batch, ExpectedLastSeq: ptr(int64(2))})
			e.wantSeqs(first.Seqs, []int64{3, 4, 5}, "batch")
			before := e.dump()
			// The retry carries the stale ExpectedLastSeq of the first try.
			again := e.append(store.AppendRequest{SessionID: "i", Steps: batch, ExpectedLastSeq: ptr(int64(2))})
			e.wantSeqs(again.Seqs, first.Seqs, "retried batch")
			if again.LastSeq != 5 {
				t.Fatalf("retried batch: LastSeq %d", again.LastSeq)
			}
			e.wantUnchanged(before, "a retried batch")
			// The retry of a part of a batch finds its steps.
			e.wantSeqs(e.appendSteps("i", batch[1]), []int64{4}, "retry of one step of a batch")
			// A retry with one step changed stores nothing.
			changed := slices.Clone(batch)
			changed[1] = taskStep(batch[1].Info().ID, "not what was stored")
			_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "i", Steps: changed})
			e.wantErr(err, store.ErrIDReused, "a batch whose second step differs from the stored one")
			e.wantUnchanged(before, "a batch reusing an ID")
		}},
		{"PartlyStored", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "i"})
			batch := steps("b", 2)
			e.appendSteps("i", batch...)
			before := e.dump()
			// Appends are all or none, so a retry finds all its steps or
			// none: a request with some stored and some new reuses IDs of
			// another request, and stores nothing, new steps included.
			for what, mixed := range map[string][]agentmem.Step{
				"stored then new": {batch[0], batch[1], actionStep("new")},
				"new then stored": {actionStep("new"), batch[1]},
			} {
				_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "i", Steps: mixed, ExpectedLastSeq: ptr(int64(2))})
				e.wantErr(err, store.ErrIDReused, "a request with steps "+what)
				e.wantUnchanged(before, "a request with steps "+what)
			}
		}},
		{"DuplicateIDsInOneRequest", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "i"})
			before := e.dump()
			_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "i", Steps: []agentmem.Step{taskStep("x", "1"), taskStep("x", "2")}})
			e.wantErr(err, agentmem.ErrInvalid, "two steps with one ID in a request")
			e.wantUnchanged(before, "a refused append")
		}},
	}
}

func (s *suite) conflictTests() []namedTest {
	return []namedTest{
		{"ExpectedLastSeq", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "c"})
			resp := e.append(store.AppendRequest{SessionID: "c", Steps: steps("a", 2), ExpectedLastSeq: ptr(int64(0))})
			e.wantSeqs(resp.Seqs, []int64{1, 2}, "append expecting 0 to an empty session")
			before := e.dump()
			for _, exp := range []int64{0, 1, 3, 100} {
				_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "c", Steps: steps(fmt.Sprintf("stale%d", exp), 2), ExpectedLastSeq: ptr(exp)})
				e.wantErr(err, agentmem.ErrConflict, fmt.Sprintf("append expecting %d when LastSeq is 2", exp))
				e.wantUnchanged(before, "a conflicting append")
			}
			// A compaction without steps is never a retry.
			_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "c", Compaction: &store.CompactionRecord{Working: []int64{2}}, ExpectedLastSeq: ptr(int64(1))})
			e.wantErr(err, agentmem.ErrConflict, "compaction expecting a stale LastSeq")
			e.wantUnchanged(before, "a conflicting compaction")
			resp = e.append(store.AppendRequest{SessionID: "c", Steps: steps("b", 1), ExpectedLastSeq: ptr(int64(2))})
			e.wantSeqs(resp.Seqs, []int64{3}, "append expecting the right LastSeq")
			// Without ExpectedLastSeq an append always goes at the end.
			e.wantSeqs(e.appendSteps("c", steps("free", 1)...), []int64{4}, "unconditional append")
		}},
	}
}

func (s *suite) atomicityTests() []namedTest {
	return []namedTest{
		{"OneBadStepStoresNone", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "a"})
			e.appendSteps("a", steps("ok", 2)...)
			before := e.dump()
			orphan := &agentmem.ActionStep{StepInfo: info("orphan"), Results: []agentmem.ToolResult{{CallID: "nobody", Content: "x"}}}
			for name, batch := range map[string][]agentmem.Step{
				"bad step in the middle": {actionStep("g1"), orphan, actionStep("g2")},
				"bad step last":          {actionStep("g1"), actionStep("g2"), taskStep("", "no ID")},
				"nil step":               {actionStep("g1"), nil},
			} {
				_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "a", Steps: batch})
				e.wantErr(err, agentmem.ErrInvalid, name)
				e.wantUnchanged(before, name)
			}
			// The good steps can still be appended, at the next seqs.
			e.wantSeqs(e.appendSteps("a", actionStep("g1"), actionStep("g2")), []int64{3, 4}, "the good steps alone")
		}},
		{"BadCompactionStoresNothing", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "a"})
			e.appendSteps("a", steps("s", 3)...)
			e.append(store.AppendRequest{SessionID: "a", Compaction: &store.CompactionRecord{Working: []int64{1, 2, 3}}}) // seq 4
			before := e.dump()
			orig2 := e.entries("a")[1].Step
			badID := store.WithNumber(actionStep("someone-else"), 2)
			wrongKind := store.WithNumber(taskStep(orig2.Info().ID, "not an action"), 2)
			cases := map[string]*store.CompactionRecord{
				"unknown seq":              {Working: []int64{1, 99}},
				"seq of a compaction":      {Working: []int64{1, 4}},
				"zero":                     {Working: []int64{0}},
				"repeated seq":             {Working: []int64{1, 1}},
				"new-step ref past steps":  {Working: []int64{store.NewStepRef(1)}},
				"repeated new-step ref":    {Working: []int64{store.NewStepRef(0), store.NewStepRef(0)}},
				"replaced not in working":  {Working: []int64{1}, Replaced: []agentmem.Step{store.WithNumber(orig2, 2)}},
				"replaced with other ID":   {Working: []int64{1, 2}, Replaced: []agentmem.Step{badID}},
				"replaced with other kind": {Working: []int64{1, 2}, Replaced: []agentmem.Step{wrongKind}},
				"replaced twice":           {Working: []int64{1, 2}, Replaced: []agentmem.Step{store.WithNumber(orig2, 2), store.WithNumber(orig2, 2)}},
				"invalid replaced copy":    {Working: []int64{1, 2}, Replaced: []agentmem.Step{store.WithNumber(&agentmem.ActionStep{StepInfo: orig2.Info(), Results: []agentmem.ToolResult{{CallID: "x"}}}, 2)}},
				"removed zero":             {Working: []int64{1}, Removed: []int64{0}},
			}
			for name, rec := range cases {
				_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "a", Steps: []agentmem.Step{summaryStep("sum-"+name, "s")}, Compaction: rec})
				e.wantErr(err, agentmem.ErrInvalid, "compaction with "+name)
				e.wantUnchanged(before, "a refused compaction ("+name+")")
			}
		}},
	}
}
