package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentmem/agentmem/facts/factstest"
	"github.com/agentmem/agentmem/facts/sqlite"
)

func open(b *testing.B) *sqlite.Store {
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "agentmem.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

func BenchmarkUpdate(b *testing.B) {
	b.Run("writers=1", func(b *testing.B) { factstest.BenchUpdate(b, open(b), 1) })
	b.Run("writers=8", func(b *testing.B) { factstest.BenchUpdate(b, open(b), 8) })
}

func BenchmarkFacts(b *testing.B) { factstest.BenchFacts(b, open(b)) }
