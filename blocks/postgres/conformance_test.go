package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/blocks/blockstest"
	"github.com/agentmem/agentmem/blocks/postgres"
	"github.com/agentmem/agentmem/internal/testenv"
)

func TestConformance(t *testing.T) { conformance(t, testenv.PostgresURL(t)) }

// TestConformanceCitus runs the blockstest suite on a Citus cluster,
// where the blocks tables are distributed by tenant.
func TestConformanceCitus(t *testing.T) { conformance(t, testenv.CitusURL(t)) }

func conformance(t *testing.T, url string) {
	var mu sync.Mutex
	schemas := map[blocks.Store]string{}
	open := func(t *testing.T, schema string) blocks.Store {
		st, err := postgres.Open(context.Background(), url, postgres.Options{Schema: schema, MaxConns: 8})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		schemas[st] = schema
		mu.Unlock()
		return st
	}
	blockstest.Run(t, blockstest.Config{
		New: func(t *testing.T) blocks.Store { return open(t, testenv.FreshSchema(t, url)) },
		Share: func(t *testing.T, st blocks.Store) blocks.Store {
			mu.Lock()
			schema := schemas[st]
			mu.Unlock()
			return open(t, schema)
		},
	})
}
