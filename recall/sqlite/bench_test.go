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

// BenchmarkSearchScoped is a search of 10,000 turns scoped to one
// session of 20 (recalltest.BenchSearchScoped).
func BenchmarkSearchScoped(b *testing.B) {
	backend, err := Open(context.Background(), filepath.Join(b.TempDir(), "recall.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer backend.Close()
	recalltest.BenchSearchScoped(b, backend, 10_000)
}

// BenchmarkSearchScopedLong is BenchmarkSearchScoped over 5,000 turns
// of 200 to 400 words (recalltest.BenchSearchScopedLong).
func BenchmarkSearchScopedLong(b *testing.B) {
	backend, err := Open(context.Background(), filepath.Join(b.TempDir(), "recall.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer backend.Close()
	recalltest.BenchSearchScopedLong(b, backend, 5_000)
}

// BenchmarkUpsert measures indexing one turn at a time into a SQLite
// file that holds 10,000, by 1 and 16 writers; see docs/benchmarks.md.
func BenchmarkUpsert(b *testing.B) {
	for _, writers := range []int{1, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			backend, err := Open(context.Background(), filepath.Join(b.TempDir(), "recall.db"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer backend.Close()
			recalltest.BenchUpsert(b, backend, 10_000, writers)
		})
	}
}

// BenchmarkUpsertBatch measures indexing 256 turns at once, as the
// server's recallview.Follower indexes the log, into a SQLite file that holds
// 10,000 (recalltest.BenchUpsertBatch).
func BenchmarkUpsertBatch(b *testing.B) {
	backend, err := Open(context.Background(), filepath.Join(b.TempDir(), "recall.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer backend.Close()
	recalltest.BenchUpsertBatch(b, backend, 10_000, 256)
}
