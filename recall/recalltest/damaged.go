package recalltest

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
)

// damagedTests check what a backend does with a document whose stored
// form does not decode (Config.Damage). The reads that return documents
// (Get of several, Around, Stale) leave it out and report it to the
// context, so a search that meets it finds the rest. Index.Get of it
// fails with agentmem.ErrDamaged. It can be deleted.
func (s *suite) damagedTests() []test {
	if s.cfg.Damage == nil {
		return []test{{"Skipped", func(t *testing.T) { t.Skip("the backend cannot hold a damaged document (Config.Damage is nil)") }}}
	}
	return []test{
		{"ReadsSkipAndReport", func(t *testing.T) {
			b := s.backend(t)
			meta := map[string]string{recall.MetaSession: "s1", "kind": "turn"}
			upsert(t, b,
				recall.Doc{ID: "d1", Tenant: "acme", Text: "the parser fails on tabs", Metadata: meta, Group: "s1", Seq: 1},
				recall.Doc{ID: "d2", Tenant: "acme", Text: "the parser fails on spaces", Metadata: meta, Group: "s1", Seq: 2},
				recall.Doc{ID: "d3", Tenant: "acme", Text: "the parser fails on newlines", Metadata: meta, Group: "s1", Seq: 3},
			)
			s.cfg.Damage(t, b, "acme", "d2")
			var mu sync.Mutex
			var reported []string
			ctx := agentmem.WithDamageReporter(bg, func(d *agentmem.DamagedError) {
				mu.Lock()
				defer mu.Unlock()
				if d.Kind != "document" || d.Tenant != "acme" || d.Err == nil {
					t.Errorf("reported %+v", d)
				}
				reported = append(reported, d.ID)
			})
			wantReported := func(what string) {
				t.Helper()
				mu.Lock()
				defer mu.Unlock()
				if !slices.Contains(reported, "d2") || slices.ContainsFunc(reported, func(id string) bool { return id != "d2" }) {
					t.Errorf("%s reported %v, want d2", what, reported)
				}
				reported = nil
			}
			docs, err := b.Get(ctx, "acme", "d1", "d2", "d3")
			if err != nil || !slices.Equal(docIDs(docs), []string{"d1", "d3"}) {
				t.Errorf("Get(d1, d2, d3) = %v, %v; want d1 and d3", docIDs(docs), err)
			}
			wantReported("Get")
			docs, err = b.Around(ctx, "acme", "s1", 1, 3)
			if err != nil || !slices.Equal(docIDs(docs), []string{"d1", "d3"}) {
				t.Errorf("Around = %v, %v; want d1 and d3", docIDs(docs), err)
			}
			wantReported("Around")
			docs, err = embeddingsOf(t, b).Stale(ctx, "acme", "model", "", 10)
			if err != nil || !slices.Equal(docIDs(docs), []string{"d1", "d3"}) {
				t.Errorf("Stale = %v, %v; want d1 and d3", docIDs(docs), err)
			}
			wantReported("Stale")

			ix := recall.New(b, recall.Options{})
			for _, q := range []recall.Query{
				{Tenant: "acme", Text: "parser fails", K: 10},
				{Tenant: "acme", Text: "parser fails", K: 10, Before: 1, After: 1},
				{Tenant: "acme", Text: "parser fails", K: 10, Filter: recall.Scope("s1", "", "")},
				{Tenant: "acme", Text: "parser fails", K: 10, Filter: recall.Filter{Spans: []recall.Span{{Group: "s1", Through: 3}}}},
			} {
				hits, err := ix.Search(ctx, q)
				if err != nil || !slices.Equal(hitIDs(hits), []string{"d1", "d3"}) && !slices.Equal(hitIDs(hits), []string{"d3", "d1"}) {
					t.Errorf("Search(%+v) = %v, %v; want d1 and d3", q, hitIDs(hits), err)
				}
				for _, h := range hits {
					if slices.ContainsFunc(h.Window, func(d recall.Doc) bool { return d.ID == "d2" }) {
						t.Errorf("Search(%+v): the damaged document is in a window", q)
					}
				}
				wantReported("Search")
			}
			_, err = ix.Get(ctx, "acme", "d2")
			var d *agentmem.DamagedError
			if !errors.As(err, &d) || d.ID != "d2" || errors.Is(err, agentmem.ErrNotFound) {
				t.Errorf("Index.Get of the damaged document: %v, want a *DamagedError", err)
			}
			if n, err := b.Delete(bg, "acme", "d2"); err != nil || n != 1 {
				t.Errorf("Delete of the damaged document: %d, %v", n, err)
			}
			if docs := get(t, b, "acme", "d1", "d2", "d3"); !slices.Equal(docIDs(docs), []string{"d1", "d3"}) {
				t.Errorf("after Delete: %v", docIDs(docs))
			}
		}},
	}
}
