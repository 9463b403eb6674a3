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
func TestConformance(t *testing.T) { conformance(t, testenv.PostgresURL(t), Options{}) }

// TestConformanceDocFreqRows runs the recalltest suite with a row of
// recall_df for every term a scoped search counts (dfRows, from one
// document instead of DefaultDocFreqRows): the suite's searches, scores
// included, must come out the same when their document frequencies are
// read from rows that every later write keeps up to date.
func TestConformanceDocFreqRows(t *testing.T) {
	conformance(t, testenv.PostgresURL(t), Options{dfMin: 1})
}

// TestConformanceCitus runs the recalltest suite on a Citus cluster,
// where recall's tables are distributed by tenant, with rows of
// recall_df for every term counted.
func TestConformanceCitus(t *testing.T) { conformance(t, testenv.CitusURL(t), Options{dfMin: 1}) }

func conformance(t *testing.T, url string, opts Options) {
	schemas := map[recall.Backend]string{}
	open := func(t *testing.T, schema string) recall.Backend {
		o := opts
		o.Schema, o.MaxConns = schema, 8
		b, err := Open(context.Background(), url, o)
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
		// jsonb holds only JSON: the damage is metadata that is not an
		// object of strings.
		Damage: func(t *testing.T, b recall.Backend, tenant, id string) {
			if _, err := b.(*Backend).pool.Exec(context.Background(), `UPDATE recall_docs SET metadata = '{"m":1}' WHERE tenant = $1 AND id = $2`, tenant, id); err != nil {
				t.Fatal(err)
			}
		},
	})
}
