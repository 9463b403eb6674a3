package recall_test

import (
	"fmt"
	"testing"

	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/recall/recalltest"
)

// BenchmarkSearch measures a k=10 search over 10,000 and 100,000
// synthetic turns in memory; see docs/benchmarks.md.
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("turns=%d", n), func(b *testing.B) {
			backend := recall.NewMemory(recall.MemoryOptions{})
			defer backend.Close()
			recalltest.BenchSearch(b, backend, n)
		})
	}
}
