package postgres

import (
	"fmt"
	"testing"

	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storetest"
)

// BenchmarkAppend measures durable appends (each one committed, and so
// flushed to the server's WAL, before Append returns) of one ~2 KB action
// step each, with ExpectedLastSeq set as a bound memory sets it. The
// harness is storetest's, shared with the other backends.
func BenchmarkAppend(b *testing.B) {
	for _, writers := range []int{1, 16} {
		name := "single"
		if writers > 1 {
			name = fmt.Sprintf("sessions=%d", writers)
		}
		b.Run(name, func(b *testing.B) {
			storetest.BenchAppend(b, store.New(openTest(b, Options{MaxConns: int32(max(4, writers))})), writers)
		})
	}
}

// BenchmarkLoad measures loading the working set of a 10,000-step session,
// without and with a compaction that leaves a summary and 10 steps.
func BenchmarkLoad(b *testing.B) {
	const steps = 10000
	b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) { storetest.BenchLoad(b, store.New(openTest(b, Options{})), steps, false) })
	b.Run(fmt.Sprintf("steps=%d_summarized", steps), func(b *testing.B) { storetest.BenchLoad(b, store.New(openTest(b, Options{})), steps, true) })
}

// BenchmarkReadFeed measures reading 256 appended steps from the change
// feed in one batch, as the recall follower reads them
// (storetest.BenchReadFeed).
func BenchmarkReadFeed(b *testing.B) {
	storetest.BenchReadFeed(b, store.New(openTest(b, Options{})), 256)
}
