package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentmem/agentmem/recall/recalltest"
)

// BenchmarkSearch measures a k=10 search over 10,000 and 100,000
// synthetic turns in a SQLite file; see docs/benchmarks.md.
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("turns=%d", n), func(b *testing.B) {
			backend, err := Open(context.Background(), filepath.Join(b.TempDir(), "recall.db"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer backend.Close()
			recalltest.BenchSearch(b, backend, n)
		})
	}
}
