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
// internal/citustest): writes, lexical and vector searches, reads and
// deletes, on the exact path and on pgvector's when the nodes have it.
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
			b, err := Open(ctx, url, Options{Schema: testenv.FreshSchema(t, url), PGVector: mode, Logger: quietLogger})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			check := func(op string, fn func() error) { t.Helper(); w.SingleShard(t, op, fn) }
			docs := []recall.Doc{
				{Tenant: "acme", ID: "d1", Text: "the deploy failed on a timeout", Group: "s1", Seq: 1, Embedding: []float32{1, 0, 0}},
				{Tenant: "acme", ID: "d2", Text: "retry the deploy with a longer timeout", Group: "s1", Seq: 2, Embedding: []float32{0.9, 0.1, 0}},
			}
			check("upsert", func() error { return b.Upsert(ctx, docs...) })
			check("lexical search", func() error {
				ms, err := b.Lexical(ctx, recall.LexicalQuery{Tenant: "acme", Terms: recall.Tokenize("deploy timeout"), Limit: 5})
				if err == nil && len(ms) != 2 {
					t.Errorf("lexical: %d matches, want 2", len(ms))
				}
				return err
			})
			check("vector search", func() error {
				ms, err := b.Vector(ctx, recall.VectorQuery{Tenant: "acme", Vector: []float32{1, 0, 0}, Limit: 5})
				if err == nil && (len(ms) != 2 || ms[0].ID != "d1") {
					t.Errorf("vector: %+v", ms)
				}
				return err
			})
			check("around", func() error { _, err := b.Around(ctx, "acme", "s1", 1, 2); return err })
			check("get", func() error { _, err := b.Get(ctx, "acme", "d1", "d2"); return err })
			check("delete", func() error { _, err := b.Delete(ctx, "acme", "d1"); return err })
		})
	}
}
