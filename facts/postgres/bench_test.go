package postgres_test

import (
	"context"
	"testing"

	"github.com/agentmem/agentmem/facts/factstest"
	"github.com/agentmem/agentmem/facts/postgres"
	"github.com/agentmem/agentmem/internal/testenv"
)

func open(b *testing.B) *postgres.Store {
	url := testenv.PostgresURL(b)
	st, err := postgres.Open(context.Background(), url, postgres.Options{Schema: testenv.FreshSchema(b, url), MaxConns: 8})
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
