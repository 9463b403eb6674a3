package storetest

import (
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

func (s *suite) reopenTests() []namedTest {
	return []namedTest{
		{"EverythingSurvives", func(t *testing.T) {
			if s.cfg.Reopen == nil {
				t.Skip("storetest: Config.Reopen is not set (an in-memory store does not outlive its process)")
			}
			e := s.open(t)
			extract := false
			e.compactedSession("c")
			e.create(store.CreateRequest{ID: "b", ParentID: "c", ForkSeq: 6, UserID: "u", Metadata: map[string]string{"k": "v"}})
			e.create(store.CreateRequest{ID: "b", Tenant: "t", Agent: "ag", Pinning: &agentmem.ChatPinning, AutoCompact: &store.AutoCompact{MaxTokens: 9000, KeepRecent: 2}, ExtractFacts: &extract})
			e.appendSteps("t/b", steps("tb", 1)...)
			e.appendSteps("b", steps("b", 2)...)
			e.create(store.CreateRequest{ID: "ttl", TTL: time.Hour, Retention: store.SingleRun})
			bm := e.openMemory("ttl")
			e.add(bm, &agentmem.TaskStep{Task: "survive"})
			before := e.dump()
			ws := e.stepsJSON(e.workingSet("c"))

			e.st = store.New(s.cfg.Reopen(t, e.st))
			t.Cleanup(func() { closeQuietly(t, e.st) })
			e.wantUnchanged(before, "Close and reopen")
			if got := e.stepsJSON(e.workingSet("c")); got != ws {
				t.Fatalf("working set after reopen:\n%s\nwant\n%s", got, ws)
			}
			// Writing carries on: seqs, idempotency, the bound memory.
			e.wantSeqs(e.appendSteps("c", steps("c-after", 1)...), []int64{8}, "append after reopen")
			e.wantSeqs(e.appendSteps("c", steps("c-after", 1)...), []int64{8}, "retried append after reopen")
			again := e.openMemory("ttl")
			e.wantSameMemory(again, bm, "bound memory after reopen")
			e.add(again, &agentmem.TaskStep{Task: "and go on"})
			// Expiry still applies.
			e.clock.Advance(2 * time.Hour)
			if resp, err := e.st.Prune(e.ctx, store.PruneRequest{}); err != nil || resp.SessionsDeleted != 1 {
				t.Fatalf("Prune after reopen: %+v, %v", resp, err)
			}
		}},
	}
}
