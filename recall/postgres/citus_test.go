package postgres

import (
	"context"
	"testing"

	"github.com/agentmem/agentmem/internal/citustest"
	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/recall"
)

// TestCitusSingleShard checks, on Citus, that each of the index's
// operations for one tenant runs on one worker and one shard group (see
// internal/citustest): writes, lexical and vector searches (a scoped one
// keeping its terms' document frequencies in recall_df, and the writes
// that then keep them up to date), reads and deletes, on the exact path
// and on pgvector's when the nodes have it.
func TestCitusSingleShard(t *testing.T) {
	url := testenv.CitusURL(t)
	ctx := context.Background()
	w := citustest.Watch(t, url)
	modes := []PGVectorMode{PGVectorOff}
	if pgvectorAvailable(t, url) {
		modes = append(modes, PGVectorRequire)
	}
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			b, err := Open(ctx, url, Options{Schema: testenv.FreshSchema(t, url), PGVector: mode, Logger: quietLogger, dfMin: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			check := func(op string, fn func() error) { t.Helper(); w.SingleShard(t, op, fn) }
			docs := []recall.Doc{
				{Tenant: "acme", ID: "d1", Text: "the deploy failed on a timeout", Group: "s1", Seq: 1, Embedding: []float32{1, 0, 0}, Metadata: map[string]string{"session": "s1"}},
				{Tenant: "acme", ID: "d2", Text: "retry the deploy with a longer timeout", Group: "s1", Seq: 2, Embedding: []float32{0.9, 0.1, 0}, Metadata: map[string]string{"session": "s1"}},
			}
			check("upsert", func() error { return b.Upsert(ctx, docs...) })
			check("lexical search", func() error {
				ms, err := b.Lexical(ctx, recall.LexicalQuery{Tenant: "acme", Terms: recall.Tokenize("deploy timeout"), Limit: 5})
				if err == nil && len(ms) != 2 {
					t.Errorf("lexical: %d matches, want 2", len(ms))
				}
				return err
			})
			check("scoped lexical search", func() error {
				ms, err := b.Lexical(ctx, recall.LexicalQuery{Tenant: "acme", Terms: recall.Tokenize("deploy timeout"), Limit: 5,
					Filter: recall.Filter{Metadata: map[string]string{"session": "s1"}}})
				if err == nil && len(ms) != 2 {
					t.Errorf("scoped lexical: %d matches, want 2", len(ms))
				}
				return err
			})
			var kept int
			if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM recall_df WHERE tenant = 'acme'`).Scan(&kept); err != nil || kept != 2 {
				t.Errorf("after the scoped search, recall_df holds %d rows of acme (%v), want 2", kept, err)
			}
			check("upsert of terms with document frequencies", func() error {
				return b.Upsert(ctx, recall.Doc{Tenant: "acme", ID: "d3", Text: "the deploy timed out", Group: "s1", Seq: 3,
					Metadata: map[string]string{"session": "s1"}, Embedding: []float32{0, 1, 0}})
			})
			check("vector search", func() error {
				ms, err := b.Vector(ctx, recall.VectorQuery{Tenant: "acme", Vector: []float32{1, 0, 0}, Limit: 5})
				if err == nil && (len(ms) != 3 || ms[0].ID != "d1") {
					t.Errorf("vector: %+v", ms)
				}
				return err
			})
			check("around", func() error { _, err := b.Around(ctx, "acme", "s1", 1, 2); return err })
			check("get", func() error { _, err := b.Get(ctx, "acme", "d1", "d2"); return err })
			check("delete", func() error { _, err := b.Delete(ctx, "acme", "d1"); return err })
			check("clear", func() error {
				_, err := b.Clear(ctx, "acme", recall.Filter{Metadata: map[string]string{"session": "s1"}})
				return err
			})
		})
	}
}
