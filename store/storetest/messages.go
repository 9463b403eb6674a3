package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
)

// Message-level writes (sessions.Service.AppendMessages and
// sessions.Service.Pop) are built on Append and Read. These tests check
// that every backend gives them what they rely on: a pending action
// stored as a step, compaction records whose copies complete it,
// conditional appends that lose no result when two writers race.

func userMsg(text string) agentmem.Message {
	return agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(text)}
}

func callsMsg(text string, ids ...string) agentmem.Message {
	m := agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text(text)}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, agentmem.ToolCall{ID: id, Name: "tool_" + id, Arguments: `{"x":1}`})
	}
	return m
}

func resultMsg(id, content string) agentmem.Message {
	return agentmem.Message{Role: agentmem.RoleTool, ToolCallID: id, Content: agentmem.Text(content)}
}

// appendMessages appends messages with sessions.Service.AppendMessages.
func (e *env) appendMessages(id string, msgs ...agentmem.Message) *sessions.MessagesResponse {
	e.t.Helper()
	resp, err := e.svc().AppendMessages(e.ctx, sessions.MessagesRequest{SessionID: id, Messages: msgs, Now: e.clock.Now})
	if err != nil {
		e.t.Fatalf("AppendMessages to %q: %v", id, err)
	}
	return resp
}

// action returns the working set's action with the given number.
func (e *env) action(id string, seq int) *agentmem.ActionStep {
	e.t.Helper()
	for _, s := range e.workingSet(id) {
		if a, ok := s.(*agentmem.ActionStep); ok && a.Number == seq {
			return a
		}
	}
	e.t.Fatalf("session %s: no action %d in the working set", id, seq)
	return nil
}

// resultsOf lists an action's results as "call=content".
func resultsOf(a *agentmem.ActionStep) []string {
	var out []string
	for _, r := range a.Results {
		out = append(out, r.CallID+"="+r.Content)
	}
	return out
}

func (s *suite) messagesTests() []namedTest {
	return []namedTest{
		{"ItemByItem", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "m"})
			e.appendMessages("m", agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text("sys")}, userMsg("task"))
			r := e.appendMessages("m", callsMsg("two calls", "a", "b"))
			e.wantSeqs(r.Seqs, []int64{3}, "the assistant message")
			if a := e.action("m", 3); !a.Pending() || len(a.Results) != 0 {
				t.Fatalf("the stored action is not pending: %+v", a)
			}
			r = e.appendMessages("m", resultMsg("b", "rb"))
			if len(r.Seqs) != 0 || !slices.Equal(r.Updated, []int64{3}) || r.CompactionSeq != 4 || r.LastSeq != 4 {
				t.Fatalf("first result: %+v", r)
			}
			if a := e.action("m", 3); !a.Pending() || !slices.Equal(resultsOf(a), []string{"b=rb"}) {
				t.Fatalf("after b: %+v", resultsOf(a))
			}
			// Another message may come before the last result.
			e.wantSeqs(e.appendMessages("m", userMsg("meanwhile")).Seqs, []int64{5}, "a message between the results")
			r = e.appendMessages("m", resultMsg("a", "ra"))
			if r.CompactionSeq != 6 || !slices.Equal(r.Updated, []int64{3}) {
				t.Fatalf("second result: %+v", r)
			}
			a := e.action("m", 3)
			if a.Pending() || !slices.Equal(resultsOf(a), []string{"a=ra", "b=rb"}) || a.ModelOutput != "two calls" {
				t.Fatalf("completed action: %+v", a)
			}
			var order []int
			for _, st := range e.workingSet("m") {
				order = append(order, st.Info().Number)
			}
			if !slices.Equal(order, []int{1, 2, 3, 5}) {
				t.Fatalf("working set %v, want the action where its call was made", order)
			}
			// The log keeps what happened: the pending original.
			if orig := e.entries("m")[2].Step.(*agentmem.ActionStep); !orig.Pending() {
				t.Fatalf("the log's original changed: %+v", orig)
			}
			// A later completion leaves the earlier copy in force.
			e.appendMessages("m", callsMsg("", "c"))
			e.appendMessages("m", resultMsg("c", "rc"))
			if a := e.action("m", 3); a.Pending() {
				t.Fatalf("the completed copy of step 3 was lost by a later completion: %+v", a)
			}
			if a := e.action("m", 7); a.Pending() {
				t.Fatalf("step 7: %+v", a)
			}
		}},
		{"CompletionsCostTheirCopies", func(t *testing.T) {
			// A completion is recorded by an amendment carrying only the
			// completed action: n calls completed one by one store O(n)
			// bytes of compaction records, not O(n^2), and the largest
			// record does not grow with n.
			cost := func(n int) (total, largest int) {
				e := s.open(t)
				id := fmt.Sprintf("n%d", n)
				e.create(store.CreateRequest{ID: id})
				e.appendMessages(id, agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text("sys")}, userMsg("task"))
				result := strings.Repeat("x", 500)
				for i := range n {
					call := fmt.Sprintf("c%04d", i)
					e.appendMessages(id, callsMsg("calling", call))
					if r := e.appendMessages(id, resultMsg(call, result)); r.CompactionSeq == 0 {
						t.Fatalf("completion %d stored no compaction entry: %+v", i, r)
					}
				}
				var records int
				for _, en := range e.entries(id) {
					if en.Kind != store.CompactionEntry {
						continue
					}
					b, err := store.EncodeCompaction(en.Compaction)
					if err != nil {
						t.Fatal(err)
					}
					records++
					total += len(b)
					largest = max(largest, len(b))
				}
				if records != n {
					t.Fatalf("%d completions, %d compaction entries", n, records)
				}
				ws := e.workingSet(id)
				if len(ws) != 2+n {
					t.Fatalf("working set of %d steps, want %d", len(ws), 2+n)
				}
				for _, st := range ws[2:] {
					if a := st.(*agentmem.ActionStep); a.Pending() || a.Results[0].Content != result {
						t.Fatalf("step %d is not completed in the working set: %+v", a.Number, a)
					}
				}
				return total, largest
			}
			total50, largest50 := cost(50)
			total100, largest100 := cost(100)
			if total100 > total50*22/10 || largest100 > largest50+32 {
				t.Fatalf("compaction records: 50 completions %d bytes (largest %d), 100 completions %d bytes (largest %d): not linear",
					total50, largest50, total100, largest100)
			}
		}},
		{"RetriesAndRefusals", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "m"})
			e.appendMessages("m", userMsg("task"), callsMsg("", "a", "b"), resultMsg("a", "ra"))
			before := e.dump()
			// The same result again is a retry: nothing is stored.
			r := e.appendMessages("m", resultMsg("a", "ra"))
			if !slices.Equal(r.Repeated, []int{0}) || r.LastSeq != 2 || len(r.Updated) != 0 {
				t.Fatalf("retried result: %+v", r)
			}
			e.wantUnchanged(before, "a retried result")
			req := sessions.MessagesRequest{SessionID: "m", Messages: []agentmem.Message{resultMsg("b", "rb"), resultMsg("a", "another")}}
			_, err := e.svc().AppendMessages(e.ctx, req)
			var ce *agentmem.ResultConflictError
			if !errors.As(err, &ce) || ce.Field != "messages[1]" || ce.CallID != "a" {
				t.Fatalf("another result for an answered call: %v", err)
			}
			e.wantUnchanged(before, "a conflicting result")
			req.Messages = []agentmem.Message{userMsg("x"), resultMsg("nobody", "r")}
			_, err = e.svc().AppendMessages(e.ctx, req)
			var ie *agentmem.InvalidError
			if !errors.As(err, &ie) || ie.Field != "messages[1].tool_call_id" {
				t.Fatalf("a result for an unknown call: %v", err)
			}
			e.wantUnchanged(before, "an unknown call")
			req.Messages, req.ExpectedLastSeq = []agentmem.Message{resultMsg("b", "rb")}, ptr(int64(1))
			_, err = e.svc().AppendMessages(e.ctx, req)
			e.wantErr(err, agentmem.ErrConflict, "a stale ExpectedLastSeq")
			e.wantUnchanged(before, "a stale ExpectedLastSeq")
			// With a key, the request's new steps are KEY/0, ... and a retry
			// of the whole request stores nothing twice.
			req = sessions.MessagesRequest{SessionID: "m", IdempotencyKey: "k1", Messages: []agentmem.Message{resultMsg("b", "rb"), userMsg("next")}}
			first, err := e.svc().AppendMessages(e.ctx, req)
			if err != nil || !slices.Equal(first.Seqs, []int64{3}) || first.CompactionSeq != 4 {
				t.Fatalf("keyed request: %+v, %v", first, err)
			}
			again, err := e.svc().AppendMessages(e.ctx, req)
			if err != nil || !slices.Equal(again.Seqs, first.Seqs) || again.LastSeq != 4 || !slices.Equal(again.Repeated, []int{0}) {
				t.Fatalf("retried keyed request: %+v, %v", again, err)
			}
			if id := e.workingSet("m")[2].Info().ID; id != "k1/0" {
				t.Fatalf("the new step's ID is %q", id)
			}
		}},
		{"Flush", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "m"})
			e.appendMessages("m", userMsg("task"), callsMsg("", "a", "b"), resultMsg("b", "rb"))
			r, err := e.svc().AppendMessages(e.ctx, sessions.MessagesRequest{SessionID: "m", Flush: true, Messages: []agentmem.Message{callsMsg("", "c")}})
			if err != nil || !slices.Equal(r.Seqs, []int64{3}) || !slices.Equal(r.Updated, []int64{2}) {
				t.Fatalf("flush: %+v, %v", r, err)
			}
			if a := e.action("m", 2); a.Pending() || a.Results[0].Content != agentmem.MissingResult || !a.Results[0].IsError || a.Results[1].Content != "rb" {
				t.Fatalf("flushed stored action: %+v", a.Results)
			}
			if a := e.action("m", 3); a.Pending() || a.Results[0].Content != agentmem.MissingResult {
				t.Fatalf("flushed new action: %+v", a.Results)
			}
		}},
		{"ConcurrentResults", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "m"})
			const calls = 6
			var ids []string
			for i := range calls {
				ids = append(ids, fmt.Sprintf("c%d", i))
			}
			e.appendMessages("m", userMsg("task"), callsMsg("fan out", ids...))
			var wg sync.WaitGroup
			errs := make(chan error, calls)
			for _, id := range ids {
				wg.Go(func() {
					_, err := e.svc().AppendMessages(e.ctx, sessions.MessagesRequest{SessionID: "m", Messages: []agentmem.Message{resultMsg(id, "result of "+id)}})
					if err != nil {
						errs <- fmt.Errorf("result %s: %w", id, err)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			a := e.action("m", 2)
			var want []string
			for _, id := range ids {
				want = append(want, id+"=result of "+id)
			}
			if a.Pending() || !slices.Equal(resultsOf(a), want) {
				t.Fatalf("after %d concurrent results: %v", calls, resultsOf(a))
			}
			if last := e.get("m").LastSeq; last != 2+calls {
				t.Fatalf("LastSeq %d: want one compaction per result", last)
			}
		}},
		{"Tenant", func(t *testing.T) {
			// A session of another tenant is not found, as a missing one:
			// whatever the messages say (a result for a call it has, one
			// for a call it has not), and for a pop, even of an empty
			// session. Nothing is stored.
			e := s.open(t)
			e.create(store.CreateRequest{ID: "t", Tenant: "acme"})
			e.create(store.CreateRequest{ID: "empty", Tenant: "acme"})
			if _, err := e.svc().AppendMessages(e.ctx, sessions.MessagesRequest{Tenant: "acme", SessionID: "t", Messages: []agentmem.Message{userMsg("task"), callsMsg("", "a")}}); err != nil {
				t.Fatal(err)
			}
			before := e.dump()
			other, acme := "globex", "acme"
			for _, msgs := range [][]agentmem.Message{{userMsg("hi")}, {resultMsg("a", "ra")}, {resultMsg("nobody", "r")}} {
				_, err := e.svc().AppendMessages(e.ctx, sessions.MessagesRequest{SessionID: "t", Tenant: other, Messages: msgs})
				e.wantErr(err, agentmem.ErrNotFound, "messages for another tenant's session")
			}
			for _, id := range []string{"t", "empty"} {
				_, err := e.svc().Pop(e.ctx, sessions.PopRequest{SessionID: id, Tenant: other})
				e.wantErr(err, agentmem.ErrNotFound, "a pop of another tenant's session")
				_, err = e.svc().Clear(e.ctx, sessions.ClearRequest{SessionID: id, Tenant: other})
				e.wantErr(err, agentmem.ErrNotFound, "a clear of another tenant's session")
			}
			e.wantUnchanged(before, "writes for another tenant")
			r, err := e.svc().AppendMessages(e.ctx, sessions.MessagesRequest{SessionID: "t", Tenant: acme, Messages: []agentmem.Message{resultMsg("a", "ra")}})
			if err != nil || !slices.Equal(r.Updated, []int64{2}) {
				t.Fatalf("a result for the session's own tenant: %+v, %v", r, err)
			}
			if _, err := e.svc().Pop(e.ctx, sessions.PopRequest{SessionID: "t", Tenant: acme}); err != nil {
				t.Fatalf("a pop for the session's own tenant: %v", err)
			}
		}},
		{"Pop", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "p"})
			e.appendMessages("p", agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text("sys")}, userMsg("task"),
				callsMsg("two calls", "a", "b"), resultMsg("a", "ra"), resultMsg("b", "rb"))
			pop := func(what string) *sessions.PopResponse {
				t.Helper()
				r, err := e.svc().Pop(e.ctx, sessions.PopRequest{SessionID: "p"})
				if err != nil {
					t.Fatalf("pop %s: %v", what, err)
				}
				return r
			}
			// The newest message is the last tool result; its call is
			// pending again.
			r := pop("result b")
			if r.Seq != 3 || r.Message.Role != agentmem.RoleTool || r.Message.ToolCallID != "b" || r.Message.Text() != "rb" || r.Rest == nil || r.CompactionSeq != 4 || r.LastSeq != 4 {
				t.Fatalf("pop result b: %+v", r)
			}
			if a := e.action("p", 3); !slices.Equal(a.Unanswered(), []string{"b"}) {
				t.Fatalf("after popping b: %+v", a)
			}
			// A result appended again answers it.
			e.appendMessages("p", resultMsg("b", "rb2"))
			if a := e.action("p", 3); a.Pending() || a.Results[1].Content != "rb2" {
				t.Fatalf("b answered again: %+v", a)
			}
			if r = pop("result b2"); r.Message.Text() != "rb2" {
				t.Fatalf("pop b2: %+v", r)
			}
			if r = pop("result a"); r.Message.ToolCallID != "a" {
				t.Fatalf("pop a: %+v", r)
			}
			// Then the assistant message: the whole step leaves.
			r = pop("the assistant message")
			if r.Seq != 3 || r.Rest != nil || r.Message.Role != agentmem.RoleAssistant || len(r.Message.ToolCalls) != 2 || r.Message.Text() != "two calls" {
				t.Fatalf("pop the assistant message: %+v", r)
			}
			// A stale ExpectedLastSeq changes nothing.
			before := e.dump()
			_, err := e.svc().Pop(e.ctx, sessions.PopRequest{SessionID: "p", ExpectedLastSeq: ptr(r.LastSeq - 1)})
			e.wantErr(err, agentmem.ErrConflict, "a pop with a stale ExpectedLastSeq")
			e.wantUnchanged(before, "a pop with a stale ExpectedLastSeq")
			r, err = e.svc().Pop(e.ctx, sessions.PopRequest{SessionID: "p", ExpectedLastSeq: ptr(r.LastSeq)})
			if err != nil || r.Seq != 2 || r.Message.Role != agentmem.RoleUser || r.Message.Text() != "task" {
				t.Fatalf("pop the task: %+v, %v", r, err)
			}
			if r = pop("the system prompt"); r.Seq != 1 || r.Message.Role != agentmem.RoleSystem {
				t.Fatalf("pop the system prompt: %+v", r)
			}
			if ws := e.workingSet("p"); len(ws) != 0 {
				t.Fatalf("working set after popping everything: %d steps", len(ws))
			}
			before = e.dump()
			_, err = e.svc().Pop(e.ctx, sessions.PopRequest{SessionID: "p"})
			if !errors.Is(err, store.ErrNothingToPop) || !strings.Contains(err.Error(), "p") {
				t.Fatalf("pop of an empty session: %v", err)
			}
			e.wantUnchanged(before, "a pop of an empty session")
			// The log keeps everything: every step, and a compaction
			// entry per pop.
			entries := e.entries("p")
			if n := len(entries); n != 3+1+6 {
				t.Fatalf("log has %d entries", n)
			}
			_, err = e.svc().Pop(e.ctx, sessions.PopRequest{SessionID: "missing"})
			e.wantErr(err, agentmem.ErrNotFound, "a pop of a missing session")
		}},
		{"PopTarget", func(t *testing.T) {
			// A pop may take out a result of an older action, or a step
			// other than the newest: what a caller with its own order of
			// messages (package responses) calls the newest. A result's
			// metadata goes out with it and comes back with the message.
			e := s.open(t)
			e.create(store.CreateRequest{ID: "pt"})
			withMeta := resultMsg("a", "ra")
			withMeta.Metadata = map[string]string{"origin": `{"k":"v"}`, agentmem.MetaIsError: "true"}
			e.appendMessages("pt", userMsg("task"), callsMsg("", "a"), callsMsg("", "b"), withMeta)
			if a := e.action("pt", 2); len(a.Results) != 1 || a.Results[0].Metadata["origin"] != `{"k":"v"}` || !a.Results[0].IsError || len(a.Results[0].Metadata) != 1 {
				t.Fatalf("the stored result: %+v", a.Results)
			}
			var seen int
			r, err := e.svc().Pop(e.ctx, sessions.PopRequest{SessionID: "pt", Target: func(ws []agentmem.Step) (int, string) {
				seen = len(ws)
				return 1, "a"
			}})
			if err != nil || seen != 3 || r.Seq != 2 || r.Rest == nil || r.Message.ToolCallID != "a" || r.Message.Metadata["origin"] != `{"k":"v"}` || r.Message.Metadata[agentmem.MetaIsError] != "true" {
				t.Fatalf("pop the result of a: %+v, %v", r, err)
			}
			if a := e.action("pt", 2); !a.Pending() || len(e.workingSet("pt")) != 3 {
				t.Fatalf("after popping a's result: %+v", a)
			}
			// A bad choice is refused and changes nothing.
			before := e.dump()
			for _, target := range []func([]agentmem.Step) (int, string){
				func(ws []agentmem.Step) (int, string) { return len(ws), "" },
				func([]agentmem.Step) (int, string) { return -1, "" },
				func([]agentmem.Step) (int, string) { return 1, "a" }, // no result any more
				func([]agentmem.Step) (int, string) { return 0, "a" }, // not an action
			} {
				_, err := e.svc().Pop(e.ctx, sessions.PopRequest{SessionID: "pt", Target: target})
				e.wantErr(err, agentmem.ErrInvalid, "a pop of a bad target")
			}
			e.wantUnchanged(before, "pops of bad targets")
			// "" pops the chosen step's newest message: here the whole
			// pending action a, which is not the newest step.
			r, err = e.svc().Pop(e.ctx, sessions.PopRequest{SessionID: "pt", Target: func([]agentmem.Step) (int, string) { return 1, "" }})
			if err != nil || r.Seq != 2 || r.Rest != nil || len(r.Message.ToolCalls) != 1 || r.Message.ToolCalls[0].ID != "a" {
				t.Fatalf("pop action a whole: %+v, %v", r, err)
			}
			var nums []int
			for _, st := range e.workingSet("pt") {
				nums = append(nums, st.Info().Number)
			}
			if !slices.Equal(nums, []int{1, 3}) {
				t.Fatalf("working set after the pops: %v", nums)
			}
		}},
		{"Clear", func(t *testing.T) {
			// Clear empties the working set with a full record naming
			// every step, pinned ones too; the log keeps them and the
			// session goes on. (Another tenant's session: see Tenant.)
			e := s.open(t)
			e.create(store.CreateRequest{ID: "c"})
			e.appendMessages("c", agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text("sys")}, userMsg("task"), callsMsg("", "a"))
			before := e.dump()
			_, err := e.svc().Clear(e.ctx, sessions.ClearRequest{SessionID: "c", ExpectedLastSeq: ptr(int64(2))})
			e.wantErr(err, agentmem.ErrConflict, "a clear with a stale ExpectedLastSeq")
			e.wantUnchanged(before, "refused clears")
			r, err := e.svc().Clear(e.ctx, sessions.ClearRequest{SessionID: "c", ExpectedLastSeq: ptr(int64(3))})
			if err != nil || !slices.Equal(r.Removed, []int64{1, 2, 3}) || r.CompactionSeq != 4 || r.LastSeq != 4 {
				t.Fatalf("clear: %+v, %v", r, err)
			}
			if ws := e.workingSet("c"); len(ws) != 0 {
				t.Fatalf("working set after a clear: %d steps", len(ws))
			}
			// Clearing an empty working set writes nothing.
			before = e.dump()
			if r, err = e.svc().Clear(e.ctx, sessions.ClearRequest{SessionID: "c"}); err != nil || len(r.Removed) != 0 || r.CompactionSeq != 0 || r.LastSeq != 4 {
				t.Fatalf("clear of an empty working set: %+v, %v", r, err)
			}
			e.wantUnchanged(before, "a clear of an empty working set")
			e.appendMessages("c", userMsg("again"))
			if ws := e.workingSet("c"); len(ws) != 1 || ws[0].Info().Number != 5 {
				t.Fatalf("working set after appending to a cleared session: %+v", ws)
			}
			if n := len(e.entries("c")); n != 5 {
				t.Fatalf("the log has %d entries, want 5", n)
			}
			_, err = e.svc().Clear(e.ctx, sessions.ClearRequest{SessionID: "missing"})
			e.wantErr(err, agentmem.ErrNotFound, "a clear of a missing session")
		}},
	}
}
