package postgres

import (
	"context"
	"testing"

	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/recall/recalltest"
)

// TestConformance runs the recalltest suite, each subtest in a fresh
// schema; Reopen opens the same schema again.
func TestConformance(t *testing.T) { conformance(t, testenv.PostgresURL(t)) }

// TestConformanceCitus runs the recalltest suite on a Citus cluster,
// where recall's tables are distributed by tenant.
func TestConformanceCitus(t *testing.T) { conformance(t, testenv.CitusURL(t)) }

func conformance(t *testing.T, url string) {
	schemas := map[recall.Backend]string{}
	open := func(t *testing.T, schema string) recall.Backend {
		b, err := Open(context.Background(), url, Options{Schema: schema, MaxConns: 8})
		if err != nil {
			t.Fatal(err)
		}
		schemas[b] = schema
		return b
	}
	recalltest.Run(t, recalltest.Config{
		New: func(t *testing.T) recall.Backend { return open(t, testenv.FreshSchema(t, url)) },
		Reopen: func(t *testing.T, b recall.Backend) recall.Backend {
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, schemas[b])
		},
	})
}
