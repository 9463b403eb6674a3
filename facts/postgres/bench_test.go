package postgres_test

import (
	"context"
	"testing"

	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/facts/factstest"
	"github.com/agentmem/agentmem/facts/postgres"
	"github.com/agentmem/agentmem/internal/testenv"
)

func BenchmarkStore(b *testing.B) {
	url := testenv.PostgresURL(b)
	factstest.Bench(b, func(b *testing.B) facts.Store {
		st, err := postgres.Open(context.Background(), url, postgres.Options{Schema: testenv.FreshSchema(b, url), MaxConns: 8})
		if err != nil {
			b.Fatal(err)
		}
		return st
	})
}
