package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
)

// Idempotency keys (store.AppendRequest.Idempotency): the key's record,
// written with the append, decides whether a later request with the key
// is a retry (the same fingerprint) or another request (refused), on
// every backend, whatever the steps' IDs say.

// keyed returns an append of steps (and a compaction) to session id with
// key, fingerprinted as the HTTP API's steps route does.
func (e *env) keyed(id, key string, ss []agentmem.Step, c *store.CompactionRecord) store.AppendRequest {
	e.t.Helper()
	fp, err := store.StepsFingerprint(ss, c)
	if err != nil {
		e.t.Fatalf("StepsFingerprint: %v", err)
	}
	return store.AppendRequest{SessionID: id, Steps: ss, Compaction: c, Idempotency: &store.Idempotency{Key: key, Fingerprint: fp}}
}

// keySteps returns n message steps with the IDs a key derives, KEY/0 ...
func keySteps(key, text string, n int) []agentmem.Step {
	out := make([]agentmem.Step, n)
	for i := range out {
		out[i] = messageStep(fmt.Sprintf("%s/%d", key, i), fmt.Sprintf("%s %d", text, i))
	}
	return out
}

// wantKeyReused checks that err refuses a request for reusing key.
func (e *env) wantKeyReused(err error, key, what string) {
	e.t.Helper()
	e.wantErr(err, store.ErrIDReused, what)
	e.wantErr(err, agentmem.ErrConflict, what)
	var re *store.IDReusedError
	if !errors.As(err, &re) || re.Key != key {
		e.t.Fatalf("%s: %v, want an *IDReusedError naming the key %q", what, err, key)
	}
}

// wantRetried checks the answer to a retry.
func (e *env) wantRetried(resp *store.AppendResponse, seqs []int64, compactionSeq, lastSeq int64, what string) {
	e.t.Helper()
	if !resp.Retried || !slices.Equal(resp.Seqs, seqs) || resp.CompactionSeq != compactionSeq || resp.LastSeq != lastSeq {
		e.t.Fatalf("%s: %+v, want a retry with seqs %v, compaction %d, last %d", what, resp, seqs, compactionSeq, lastSeq)
	}
}

func (s *suite) keyTests() []namedTest {
	return []namedTest{
		{"Retry", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "k"})
			req := e.keyed("k", "turn", keySteps("turn", "hello", 2), nil)
			req.ExpectedLastSeq = ptr(int64(0))
			first := e.append(req)
			e.wantSeqs(first.Seqs, []int64{1, 2}, "first append")
			if first.Retried {
				t.Fatal("the first append reports a retry")
			}
			before := e.dump()
			e.clock.Advance(time.Second)
			// The retry carries the first try's stale ExpectedLastSeq.
			e.wantRetried(e.append(req), []int64{1, 2}, 0, 2, "the same request again")
			e.wantUnchanged(before, "a retry")
			e.appendSteps("k", taskStep("later", "x"))
			e.wantRetried(e.append(req), []int64{1, 2}, 0, 3, "the same request after another append")
			// Times and numbers do not count, as for a step-ID retry.
			again := e.keyed("k", "turn", keySteps("turn", "hello", 2), nil)
			h := again.Steps[0].Info()
			h.Number, h.Time = 9, stepTime.Add(time.Hour)
			again.Steps[0] = agentmem.WithInfo(again.Steps[0], h)
			e.wantRetried(e.append(again), []int64{1, 2}, 0, 3, "the same request with another time")
		}},
		{"OtherRequest", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "k"})
			e.append(e.keyed("k", "turn", keySteps("turn", "hello", 2), nil))
			before := e.dump()
			sum := summaryStep("sum", "s", agentmem.Range{From: 1, To: 2})
			for what, req := range map[string]store.AppendRequest{
				// The first step of the stored ones, again: the step-ID
				// rule alone took it for a retry.
				"one step of the request":     e.keyed("k", "turn", keySteps("turn", "hello", 1), nil),
				"the steps and one more":      e.keyed("k", "turn", keySteps("turn", "hello", 3), nil),
				"a changed step":              e.keyed("k", "turn", keySteps("turn", "bye", 2), nil),
				"steps with other IDs":        e.keyed("k", "turn", []agentmem.Step{taskStep("elsewhere", "x")}, nil),
				"a compaction alone":          e.keyed("k", "turn", nil, &store.CompactionRecord{Working: []int64{2}, Removed: []int64{1}}),
				"the steps with a compaction": e.keyed("k", "turn", append(keySteps("turn", "hello", 2), sum), &store.CompactionRecord{Working: []int64{store.NewStepRef(2)}, Removed: []int64{1, 2}}),
				"nothing to append":           {SessionID: "k", Idempotency: &store.Idempotency{Key: "turn", Fingerprint: "other"}},
			} {
				for _, exp := range []*int64{nil, ptr(int64(2))} {
					req.ExpectedLastSeq = exp
					_, err := e.st.Append(e.ctx, req)
					e.wantKeyReused(err, "turn", "the key with "+what)
					e.wantUnchanged(before, "the key with "+what)
				}
			}
			// The key is the session's: another session may use it.
			e.create(store.CreateRequest{ID: "other"})
			r := e.append(e.keyed("other", "turn", []agentmem.Step{taskStep("elsewhere", "x")}, nil))
			if r.Retried || !slices.Equal(r.Seqs, []int64{1}) {
				t.Fatalf("the key in another session: %+v", r)
			}
		}},
		{"KeyOnly", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "k"})
			req := e.keyed("k", "turn", keySteps("turn", "hello", 2), nil)
			e.append(req)
			before := e.dump()
			// A key without a record: nothing stored, no retry.
			r := e.append(store.AppendRequest{SessionID: "k", Idempotency: &store.Idempotency{Key: "new", Fingerprint: "f"}, ExpectedLastSeq: ptr(int64(0))})
			if r.Retried || len(r.Seqs) != 0 || r.CompactionSeq != 0 || r.LastSeq != 2 {
				t.Fatalf("a key-only append of a new key: %+v", r)
			}
			e.wantUnchanged(before, "a key-only append")
			// The recorded key with its fingerprint: the recorded answer.
			e.wantRetried(e.append(store.AppendRequest{SessionID: "k", Idempotency: req.Idempotency}), []int64{1, 2}, 0, 2, "a key-only retry")
			e.wantUnchanged(before, "a key-only retry")
			_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "missing", Idempotency: req.Idempotency})
			e.wantErr(err, agentmem.ErrNotFound, "a key-only append to a missing session")
		}},
		{"Compaction", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "k"})
			e.appendSteps("k", systemStep("sys"), taskStep("task", "t"), actionStep("a1"), actionStep("a2"))
			sum := []agentmem.Step{summaryStep("sum", "s", agentmem.Range{From: 3, To: 4})}
			req := e.keyed("k", "sum", sum, &store.CompactionRecord{Working: []int64{1, 2, store.NewStepRef(0)}, Removed: []int64{3, 4}})
			first := e.append(req)
			e.wantSeqs(first.Seqs, []int64{5}, "the summary")
			if first.CompactionSeq != 6 {
				t.Fatalf("the summary's compaction: %+v", first)
			}
			e.wantRetried(e.append(req), []int64{5}, 6, 6, "the summary again")
			// A compaction alone, with a key.
			alone := e.keyed("k", "drop", nil, &store.CompactionRecord{Working: []int64{1, 2}, Removed: []int64{5}})
			if r := e.append(alone); r.CompactionSeq != 7 || len(r.Seqs) != 0 {
				t.Fatalf("a compaction alone: %+v", r)
			}
			before := e.dump()
			e.wantRetried(e.append(alone), nil, 7, 7, "a compaction alone again")
			e.wantUnchanged(before, "retried compactions")
		}},
		{"WithoutRecord", func(t *testing.T) {
			// Steps stored without a key (as before keys were recorded):
			// a keyed request finds no record, and its step IDs decide.
			e := s.open(t)
			e.create(store.CreateRequest{ID: "k"})
			old := keySteps("turn", "hello", 2)
			e.appendSteps("k", old...)
			before := e.dump()
			e.wantRetried(e.append(e.keyed("k", "turn", old, nil)), []int64{1, 2}, 0, 2, "a keyed retry of steps stored without a key")
			e.wantUnchanged(before, "a keyed retry of steps stored without a key")
			_, err := e.st.Append(e.ctx, e.keyed("k", "turn", keySteps("turn", "bye", 2), nil))
			e.wantErr(err, store.ErrIDReused, "a keyed request whose step IDs hold other steps")
			e.wantUnchanged(before, "a keyed request whose step IDs hold other steps")
		}},
		{"Branches", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "p"})
			before := e.keyed("p", "early", keySteps("early", "a", 2), nil) // seqs 1, 2
			e.append(before)
			after := e.keyed("p", "late", keySteps("late", "b", 1), nil) // seq 3
			e.append(after)
			e.create(store.CreateRequest{ID: "b", ParentID: "p", ForkSeq: 2})
			other := e.keyed("b", "early", keySteps("early", "changed", 2), nil)
			check := func(when string) {
				t.Helper()
				// A request recorded in the inherited history is a retry
				// on the branch, and its key is taken there.
				r := before
				r.SessionID = "b"
				e.wantRetried(e.append(r), []int64{1, 2}, 0, e.get("b").LastSeq, when+": a retry on the branch of a request of its history")
				_, err := e.st.Append(e.ctx, other)
				e.wantKeyReused(err, "early", when+": the branch reusing a key of its history")
			}
			check("before the parent's deletion")
			// One recorded after the fork point is not the branch's.
			r := e.keyed("b", "late", keySteps("late", "c", 1), nil)
			if got := e.append(r); got.Retried || !slices.Equal(got.Seqs, []int64{3}) {
				t.Fatalf("the branch using a key its parent used after the fork: %+v", got)
			}
			if err := e.st.Delete(e.ctx, "", "p"); err != nil {
				t.Fatal(err)
			}
			check("after the parent's deletion")
			e.wantRetried(e.append(r), []int64{3}, 0, 3, "the branch's own key after the parent's deletion")
		}},
		{"Reopen", func(t *testing.T) {
			if s.cfg.Reopen == nil {
				t.Skip("storetest: Config.Reopen is not set (an in-memory store does not outlive its process)")
			}
			e := s.open(t)
			e.create(store.CreateRequest{ID: "k"})
			req := e.keyed("k", "turn", keySteps("turn", "hello", 2), nil)
			e.append(req)
			e.st = store.New(s.cfg.Reopen(t, e.st))
			e.wantRetried(e.append(req), []int64{1, 2}, 0, 2, "a retry after a reopen")
			_, err := e.st.Append(e.ctx, e.keyed("k", "turn", keySteps("turn", "hello", 1), nil))
			e.wantKeyReused(err, "turn", "another request after a reopen")
		}},
		{"Concurrent", func(t *testing.T) {
			// Writers racing with one key and two requests: one request is
			// stored once, every writer of it is answered its seqs, and
			// every writer of the other is refused.
			e := s.open(t)
			e.create(store.CreateRequest{ID: "k"})
			reqs := []store.AppendRequest{e.keyed("k", "race", keySteps("race", "a", 2), nil), e.keyed("k", "race", keySteps("race", "b", 1), nil)}
			const writers = 8
			var wg sync.WaitGroup
			resps := make([]*store.AppendResponse, writers)
			errs := make([]error, writers)
			start := make(chan struct{})
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					resps[w], errs[w] = e.st.Append(e.ctx, reqs[w%2])
				}()
			}
			close(start)
			wg.Wait()
			won := -1
			for w := range writers {
				if errs[w] == nil {
					won = w % 2
				}
			}
			if won < 0 {
				t.Fatalf("every writer failed: %v", errs)
			}
			stored := 0
			for w := range writers {
				if w%2 != won {
					e.wantKeyReused(errs[w], "race", fmt.Sprintf("writer %d of the other request", w))
					continue
				}
				if errs[w] != nil || !slices.Equal(resps[w].Seqs, seqRange(1, int64(len(reqs[won].Steps)))) {
					t.Fatalf("writer %d of the stored request: %+v, %v", w, resps[w], errs[w])
				}
				if !resps[w].Retried {
					stored++
				}
			}
			if stored != 1 || e.get("k").LastSeq != int64(len(reqs[won].Steps)) {
				t.Fatalf("%d writers stored the request; the session's last seq is %d", stored, e.get("k").LastSeq)
			}
		}},
		{"Messages", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "m"})
			turn := sessions.MessagesRequest{SessionID: "m", IdempotencyKey: "t1", Now: e.clock.Now,
				Messages: []agentmem.Message{userMsg("task"), callsMsg("two calls", "a", "b")}}
			first, err := e.svc().AppendMessages(e.ctx, turn)
			if err != nil || !slices.Equal(first.Seqs, []int64{1, 2}) {
				t.Fatalf("the turn: %+v, %v", first, err)
			}
			before := e.dump()
			// A retry that drops a message of the request is another
			// request: the step-ID rule alone took it for a retry.
			dropped := turn
			dropped.Messages = turn.Messages[:1]
			_, err = e.svc().AppendMessages(e.ctx, dropped)
			e.wantKeyReused(err, "t1", "a retry without the request's last message")
			e.wantUnchanged(before, "a retry without the request's last message")
			flushed := turn
			flushed.Flush = true
			_, err = e.svc().AppendMessages(e.ctx, flushed)
			e.wantKeyReused(err, "t1", "the request with flush")
			e.wantUnchanged(before, "the request with flush")

			// A result for a stored call, retried, is answered as it
			// was: its amendment and the action it completed.
			res := sessions.MessagesRequest{SessionID: "m", IdempotencyKey: "r1", Messages: []agentmem.Message{resultMsg("a", "ra")}}
			r, err := e.svc().AppendMessages(e.ctx, res)
			if err != nil || len(r.Seqs) != 0 || r.CompactionSeq != 3 || !slices.Equal(r.Updated, []int64{2}) {
				t.Fatalf("the result: %+v, %v", r, err)
			}
			before = e.dump()
			again, err := e.svc().AppendMessages(e.ctx, res)
			if err != nil || len(again.Seqs) != 0 || again.CompactionSeq != 3 || !slices.Equal(again.Updated, []int64{2}) || again.LastSeq != 3 {
				t.Fatalf("the result retried: %+v, %v", again, err)
			}
			e.wantUnchanged(before, "a retried result")
			// The key with the other call's result, or with the same
			// result changed, is another request: refused, as such.
			for what, msg := range map[string]agentmem.Message{
				"the other call's result":         resultMsg("b", "rb"),
				"another result for a":            resultMsg("a", "changed"),
				"a result for a call nobody made": resultMsg("nobody", "r"),
			} {
				other := res
				other.Messages = []agentmem.Message{msg}
				_, err = e.svc().AppendMessages(e.ctx, other)
				e.wantKeyReused(err, "r1", "the key with "+what)
				e.wantUnchanged(before, "the key with "+what)
			}
			// A recorded key is refused for another request even when
			// that one would store nothing (its result is recorded).
			t1Repeat := sessions.MessagesRequest{SessionID: "m", IdempotencyKey: "t1", Messages: []agentmem.Message{resultMsg("a", "ra")}}
			_, err = e.svc().AppendMessages(e.ctx, t1Repeat)
			e.wantKeyReused(err, "t1", "a recorded key with a repeated result")
			e.wantUnchanged(before, "a recorded key with a repeated result")
			// The request's own fingerprint, when given, names it.
			fp := res
			fp.Fingerprint = "another transport's request"
			_, err = e.svc().AppendMessages(e.ctx, fp)
			e.wantKeyReused(err, "r1", "the same messages with another fingerprint")
		}},
	}
}
