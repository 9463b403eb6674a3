package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/facts/factstest"
	"github.com/agentmem/agentmem/facts/sqlite"
)

func BenchmarkStore(b *testing.B) {
	factstest.Bench(b, func(b *testing.B) facts.Store {
		st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "agentmem.db"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return st
	})
}
