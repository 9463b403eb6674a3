package sqlite

import (
	"fmt"
	"testing"

	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storetest"
)

// BenchmarkAppend measures durable appends (synchronous=FULL: each one is
// fsynced before Append returns) of one ~2 KB action step each. The
// harness is storetest's, shared with the other backends.
func BenchmarkAppend(b *testing.B) {
	for _, writers := range []int{1, 16} {
		name := "single"
		if writers > 1 {
			name = fmt.Sprintf("sessions=%d", writers)
		}
		b.Run(name, func(b *testing.B) {
			st, _ := openTemp(b, nil)
			storetest.BenchAppend(b, store.New(st), writers)
		})
	}
}

// BenchmarkLoad measures loading the working set of a 10,000-step session,
// without and with a compaction that leaves a summary and 10 steps.
func BenchmarkLoad(b *testing.B) {
	const steps = 10000
	for _, summarized := range []bool{false, true} {
		name := fmt.Sprintf("steps=%d", steps)
		if summarized {
			name += "_summarized"
		}
		b.Run(name, func(b *testing.B) {
			st, _ := openTemp(b, nil)
			storetest.BenchLoad(b, store.New(st), steps, summarized)
		})
	}
}

// BenchmarkReadFeed measures reading 256 appended steps from the change
// feed in one batch, as the recall follower reads them
// (storetest.BenchReadFeed).
func BenchmarkReadFeed(b *testing.B) {
	st, _ := openTemp(b, nil)
	storetest.BenchReadFeed(b, store.New(st), 256)
}
