package recalltest

import (
	"errors"
	"slices"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
)

// batchWriter returns the backend as a recall.BatchWriter, failing the
// test if it is not one: every backend of this module writes batches.
func batchWriter(t *testing.T, b recall.Backend) recall.BatchWriter {
	t.Helper()
	bw, ok := b.(recall.BatchWriter)
	if !ok {
		t.Fatalf("%T is not a recall.BatchWriter", b)
	}
	return bw
}

// checkpoint returns the value of a checkpoint, "" and false if none.
func checkpoint(t *testing.T, bw recall.BatchWriter, name string) (string, bool) {
	t.Helper()
	v, ok, err := bw.Checkpoint(bg, name)
	if err != nil {
		t.Fatal(err)
	}
	return v, ok
}

func (s *suite) batchTests() []test {
	return []test{
		{"WritesAndCheckpoint", func(t *testing.T) {
			// Clears apply before upserts, across tenants, and the
			// checkpoint is saved and replaced.
			b := s.backend(t)
			bw := batchWriter(t, b)
			if _, ok := checkpoint(t, bw, "recall"); ok {
				t.Fatal("a new backend has a checkpoint")
			}
			upsert(t, b, recall.Doc{ID: "s1#1", Tenant: "a", Text: "old turn", Metadata: map[string]string{"session": "s1"}},
				recall.Doc{ID: "s2#1", Tenant: "a", Text: "kept turn", Metadata: map[string]string{"session": "s2"}})
			err := bw.WriteBatch(bg, recall.Batch{
				Clears: []recall.Clear{{Tenant: "a", Filter: recall.Filter{Metadata: map[string]string{"session": "s1"}}}},
				Upserts: []recall.Doc{
					{ID: "s1#1", Tenant: "a", Text: "new turn", Metadata: map[string]string{"session": "s1"}},
					{ID: "s1#1", Tenant: "b", Text: "other tenant turn"},
				},
				Checkpoint: &recall.Checkpoint{Name: "recall", Value: `{"pos":7}`},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := docIDs(get(t, b, "a", "s1#1", "s2#1")); !slices.Equal(got, []string{"s1#1", "s2#1"}) {
				t.Fatalf("tenant a holds %v", got)
			}
			if d := get(t, b, "a", "s1#1"); d[0].Text != "new turn" {
				t.Fatalf("the upsert after the clear: %q", d[0].Text)
			}
			if got := lexical(t, b, "b", "tenant", 10, recall.Filter{}); !slices.Equal(got, []string{"s1#1"}) {
				t.Fatalf("tenant b: %v", got)
			}
			if got := lexical(t, b, "a", "old", 10, recall.Filter{}); len(got) != 0 {
				t.Fatalf("the cleared text is still found: %v", got)
			}
			if v, ok := checkpoint(t, bw, "recall"); !ok || v != `{"pos":7}` {
				t.Fatalf("checkpoint %q, %v", v, ok)
			}
			if err := bw.WriteBatch(bg, recall.Batch{Checkpoint: &recall.Checkpoint{Name: "recall", Value: `{"pos":9}`}}); err != nil {
				t.Fatal(err)
			}
			if v, _ := checkpoint(t, bw, "recall"); v != `{"pos":9}` {
				t.Fatalf("checkpoint %q after it was replaced", v)
			}
			if _, ok := checkpoint(t, bw, "other"); ok {
				t.Fatal("a checkpoint never saved is there")
			}
			// Statistics follow the batch: the tenant's document count
			// is what it holds.
			st, err := lexicalOf(t, b).DocFreqs(bg, "a", []string{"turn"})
			if err != nil {
				t.Fatal(err)
			}
			if st.Docs != 2 || st.DF["turn"] != 2 {
				t.Fatalf("tenant a's statistics: %+v", st)
			}
		}},
		{"AllOrNothing", func(t *testing.T) {
			// A batch with one bad document writes nothing, checkpoint
			// included.
			b := s.backend(t)
			bw := batchWriter(t, b)
			upsert(t, b, recall.Doc{ID: "x", Tenant: "a", Text: "stays", Metadata: map[string]string{"session": "s"}})
			err := bw.WriteBatch(bg, recall.Batch{
				Clears:     []recall.Clear{{Tenant: "a"}},
				Upserts:    []recall.Doc{{ID: "y", Tenant: "a", Text: "fine"}, {ID: "z", Tenant: "b", Text: "bad\x00text"}},
				Checkpoint: &recall.Checkpoint{Name: "recall", Value: "1"},
			})
			if !errors.Is(err, agentmem.ErrInvalid) {
				t.Fatalf("a batch with a NUL in a text: %v", err)
			}
			if got := docIDs(get(t, b, "a", "x", "y")); !slices.Equal(got, []string{"x"}) {
				t.Fatalf("after a refused batch tenant a holds %v", got)
			}
			if _, ok := checkpoint(t, bw, "recall"); ok {
				t.Fatal("a refused batch saved its checkpoint")
			}
			for _, bad := range []recall.Batch{
				{Checkpoint: &recall.Checkpoint{Name: "a/b", Value: "1"}},
				{Checkpoint: &recall.Checkpoint{Name: "ok", Value: "nul\x00"}},
				{Upserts: []recall.Doc{{ID: "d", Tenant: "a", Text: "1"}, {ID: "d", Tenant: "a", Text: "2"}}},
				{Clears: []recall.Clear{{Tenant: "a", Filter: recall.Filter{Metadata: map[string]string{"": "v"}}}}},
			} {
				if err := bw.WriteBatch(bg, bad); !errors.Is(err, agentmem.ErrInvalid) {
					t.Errorf("WriteBatch(%+v): %v, want ErrInvalid", bad, err)
				}
			}
			if _, _, err := bw.Checkpoint(bg, ""); !errors.Is(err, agentmem.ErrInvalid) {
				t.Errorf("Checkpoint of an empty name: %v", err)
			}
		}},
		{"Reopen", func(t *testing.T) {
			if s.cfg.Reopen == nil {
				t.Skip("the backend keeps nothing across a reopen")
			}
			b := s.cfg.New(t)
			if err := batchWriter(t, b).WriteBatch(bg, recall.Batch{
				Upserts:    []recall.Doc{{ID: "a", Tenant: "t", Text: "durable"}},
				Checkpoint: &recall.Checkpoint{Name: "recall", Value: "42"},
			}); err != nil {
				t.Fatal(err)
			}
			b = s.cfg.Reopen(t, b)
			t.Cleanup(func() { b.Close() })
			if v, ok := checkpoint(t, batchWriter(t, b), "recall"); !ok || v != "42" {
				t.Fatalf("checkpoint after reopen: %q, %v", v, ok)
			}
			if got := lexical(t, b, "t", "durable", 10, recall.Filter{}); !slices.Equal(got, []string{"a"}) {
				t.Fatalf("after reopen: %v", got)
			}
		}},
	}
}
