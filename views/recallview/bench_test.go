package recallview_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storetest"
	"github.com/agentmem/agentmem/views/recallview"
)

// BenchmarkStepDocs measures what the follower does for each appended
// step before the index's transaction: its document (StepDocs) and the
// document's terms (recall.Tokenize), over 256 steps of an agent's loop
// (action steps of about 2 KB, and the messages between them).
func BenchmarkStepDocs(b *testing.B) {
	sess := &store.Session{ID: "bench", Tenant: "t", UserID: "u", Agent: "coder"}
	entries := make([]store.Entry, 256)
	for i := range entries {
		var s agentmem.Step = storetest.BenchStep(fmt.Sprintf("step-%d", i), i, storetest.BenchStepSize)
		if i%4 == 0 {
			s = &agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleUser,
				Content: agentmem.Content{agentmem.TextPart(fmt.Sprintf("Please look at src/file_%d.go again: the tests of request %x fail.", i, i*7919))}}}
		}
		entries[i] = store.Entry{Seq: int64(i + 1), Kind: store.StepEntry, Step: s, Time: time.Unix(1700000000, 0)}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range entries {
			for _, d := range recallview.StepDocs(sess, e) {
				recall.Tokenize(d.Text)
			}
		}
	}
}
