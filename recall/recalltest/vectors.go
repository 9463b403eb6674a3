package recalltest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/agentmem/agentmem/recall"
)

func (s *suite) vectorTests() []test {
	return []test{
		{"Cosine", func(t *testing.T) {
			b := s.backend(t)
			upsert(t, b,
				recall.Doc{ID: "x", Tenant: "t", Text: "x", Embedding: []float32{1, 0, 0}},
				recall.Doc{ID: "xy", Tenant: "t", Text: "xy", Embedding: []float32{10, 10, 0}}, // length does not matter
				recall.Doc{ID: "y", Tenant: "t", Text: "y", Embedding: []float32{0, 1, 0}},
				recall.Doc{ID: "neg", Tenant: "t", Text: "neg", Embedding: []float32{-1, 0, 0}},
				recall.Doc{ID: "zero", Tenant: "t", Text: "zero", Embedding: []float32{0, 0, 0}},
				recall.Doc{ID: "dim2", Tenant: "t", Text: "other dimension", Embedding: []float32{1, 0}},
				recall.Doc{ID: "none", Tenant: "t", Text: "no vector"})
			ms, err := vectorOf(t, b).Vector(bg, recall.VectorQuery{Tenant: "t", Vector: []float32{2, 1, 0}, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if got := matchIDs(ms); !slices.Equal(got, []string{"xy", "x", "y", "neg"}) {
				t.Fatalf("Vector = %v, want xy x y neg", got)
			}
			want := []float64{3 / math.Sqrt(10), 2 / math.Sqrt(5), 1 / math.Sqrt(5), -2 / math.Sqrt(5)}
			for i, m := range ms {
				if math.Abs(m.Score-want[i]) > 1e-6 {
					t.Errorf("%s: cosine %v, want %v", m.ID, m.Score, want[i])
				}
			}
			if ms, _ := vectorOf(t, b).Vector(bg, recall.VectorQuery{Tenant: "t", Vector: []float32{2, 1, 0}, Limit: 2}); !slices.Equal(matchIDs(ms), []string{"xy", "x"}) {
				t.Errorf("limit 2: %v", matchIDs(ms))
			}
			if ms, _ := vectorOf(t, b).Vector(bg, recall.VectorQuery{Tenant: "t", Vector: []float32{0, 0, 0}, Limit: 2}); len(ms) != 0 {
				t.Errorf("a zero query vector matched %v", matchIDs(ms))
			}
			upsert(t, b, recall.Doc{ID: "x", Tenant: "t", Text: "x", Embedding: []float32{0, 0, 1}, Metadata: map[string]string{"k": "v"}})
			ms, _ = vectorOf(t, b).Vector(bg, recall.VectorQuery{Tenant: "t", Vector: []float32{0, 0, 1}, Limit: 10, Filter: recall.Filter{Metadata: map[string]string{"k": "v"}}})
			if !slices.Equal(matchIDs(ms), []string{"x"}) || math.Abs(ms[0].Score-1) > 1e-6 {
				t.Errorf("replaced vector with filter: %+v", ms)
			}
		}},
	}
}

func (s *suite) hybridTests() []test {
	return []test{
		{"Fusion", func(t *testing.T) {
			srv := NewEmbeddingServer(t, map[string]string{"automobil": "car", "car": "automobil"})
			b := s.backend(t)
			lexicalOf(t, b)
			vectorOf(t, b)
			ix := recall.New(b, recall.Options{Embedder: srv.Embedder(t, "m1")})
			if err := ix.Upsert(bg,
				recall.Doc{ID: "lex", Tenant: "t", Text: "my car broke down on the highway"},
				recall.Doc{ID: "sem", Tenant: "t", Text: "the automobile needs repair"},
				recall.Doc{ID: "pre", Tenant: "t", Text: "precomputed", Embedding: srv.Vector("m1", "car"), EmbeddingModel: "m1"},
				recall.Doc{ID: "off", Tenant: "t", Text: "cooking pasta tonight"}); err != nil {
				t.Fatal(err)
			}
			if d := get(t, b, "t", "sem")[0]; d.EmbeddingModel != "m1" || len(d.Embedding) != EmbeddingDims {
				t.Fatalf("Upsert did not embed: model %q, %d dims", d.EmbeddingModel, len(d.Embedding))
			}
			if n := srv.Inputs.Load(); n != 3 {
				t.Errorf("embedded %d texts, want 3 (the precomputed one is kept)", n)
			}
			// Lexically only "lex" has "car"; the vectors find "sem" and "pre".
			lex := lexical(t, b, "t", "car", 10, recall.Filter{})
			if !slices.Equal(lex, []string{"lex"}) {
				t.Fatalf("Lexical(car) = %v", lex)
			}
			hits, err := ix.Search(bg, recall.Query{Tenant: "t", Text: "car", K: 3})
			if err != nil {
				t.Fatal(err)
			}
			got := hitIDs(hits)
			slices.Sort(got)
			if !slices.Equal(got, []string{"lex", "pre", "sem"}) {
				t.Errorf("hybrid Search(car) = %v, want lex, pre, sem", hitIDs(hits))
			}
			// A document both rankings find outranks those only one finds.
			if hitIDs(hits)[0] != "lex" {
				t.Errorf("hybrid order %v: lex (both lists) should lead", hitIDs(hits))
			}
			// A caller's query vector is used as given.
			hits, err = ix.Search(bg, recall.Query{Tenant: "t", Text: "pasta", Embedding: srv.Vector("m1", "automobile repair"), K: 2})
			if err != nil {
				t.Fatal(err)
			}
			if got := hitIDs(hits); len(got) != 2 || !slices.Contains(got, "off") || !slices.Contains(got, "sem") {
				t.Errorf("Search(pasta, vector of automobile repair) = %v", got)
			}
			// An embedder failure fails the upsert and writes nothing.
			srv.Fail.Store(true)
			if err := ix.Upsert(bg, recall.Doc{ID: "new", Tenant: "t", Text: "new doc"}); err == nil {
				t.Error("Upsert succeeded while the embedder fails")
			}
			if len(get(t, b, "t", "new")) != 0 {
				t.Error("a failed Upsert wrote the document")
			}
		}},
	}
}

func (s *suite) reembedTests() []test {
	return []test{
		{"ModelChange", func(t *testing.T) {
			srv := NewEmbeddingServer(t, nil)
			b := s.backend(t)
			vectorOf(t, b)
			embeddingsOf(t, b)
			// Written with no embedder: lexical only.
			var docs []recall.Doc
			for i := range 25 {
				docs = append(docs, recall.Doc{ID: fmt.Sprintf("d%02d", i), Tenant: "t", Text: fmt.Sprintf("note %d about topic%d", i, i%5)})
			}
			upsert(t, b, docs...)
			upsert(t, b, recall.Doc{ID: "other", Tenant: "u", Text: "another tenant's note"})
			before := lexical(t, b, "t", "topic3 note", 50, recall.Filter{})

			ix := recall.New(b, recall.Options{Embedder: srv.Embedder(t, "m1"), DeferEmbedding: true})
			var progress []int
			n, err := ix.Reembed(bg, recall.ReembedOptions{Batch: 10, Progress: func(done int) { progress = append(progress, done) }})
			if err != nil || n != 26 {
				t.Fatalf("Reembed = %d, %v; want 26", n, err)
			}
			if !slices.Equal(progress, []int{10, 20, 25, 26}) {
				t.Errorf("progress %v", progress)
			}
			for _, d := range get(t, b, "t", "d00", "d24") {
				if d.EmbeddingModel != "m1" || !slices.Equal(d.Embedding, srv.Vector("m1", d.Text)) {
					t.Errorf("%s: model %q, vector %v", d.ID, d.EmbeddingModel, d.Embedding)
				}
			}
			if n, err := ix.Reembed(bg, recall.ReembedOptions{}); err != nil || n != 0 {
				t.Errorf("a second Reembed did %d, %v", n, err)
			}
			// The model changes: everything is embedded again, in the
			// background, while lexical search is unchanged.
			ix2 := recall.New(b, recall.Options{Embedder: srv.Embedder(t, "m2"), DeferEmbedding: true})
			if err := ix2.Upsert(bg, recall.Doc{ID: "late", Tenant: "t", Text: "written during the change"}); err != nil {
				t.Fatal(err)
			}
			if d := get(t, b, "t", "late")[0]; d.Embedding != nil || d.EmbeddingModel != "" {
				t.Errorf("DeferEmbedding upsert embedded: %+v", d)
			}
			job := ix2.StartReembed(bg, recall.ReembedOptions{Tenants: []string{"t"}, Batch: 4})
			n, err = job.Wait()
			if err != nil || n != 26 || job.Reembedded() != 26 {
				t.Fatalf("background Reembed = %d, %v; want 26", n, err)
			}
			if after := lexical(t, b, "t", "topic3 note", 50, recall.Filter{}); !slices.Equal(before, after[:len(before)]) && !slices.Equal(before, after) {
				t.Errorf("lexical results changed: %v then %v", before, after)
			}
			if d := get(t, b, "u", "other")[0]; d.EmbeddingModel != "m1" {
				t.Errorf("tenant u was re-embedded though not asked: %q", d.EmbeddingModel)
			}
			// The vectors of m2 find the documents.
			hits, err := ix2.Search(bg, recall.Query{Tenant: "t", Embedding: srv.Vector("m2", "note 7 about topic2"), K: 1})
			if err != nil || len(hits) != 1 || hits[0].Doc.ID != "d07" {
				t.Errorf("vector search after re-embedding: %v, %v", hitIDs(hits), err)
			}
		}},
		{"StaleText", func(t *testing.T) {
			b := s.backend(t)
			upsert(t, b, recall.Doc{ID: "d", Tenant: "t", Text: "new text"})
			n, err := embeddingsOf(t, b).SetEmbeddings(bg, "t", []recall.EmbeddingUpdate{
				{ID: "d", Text: "old text", Vector: []float32{1}, Model: "m"},
				{ID: "missing", Text: "x", Vector: []float32{1}, Model: "m"},
			})
			if err != nil || n != 0 {
				t.Errorf("SetEmbeddings of a stale text = %d, %v; want 0", n, err)
			}
			if d := get(t, b, "t", "d")[0]; d.Embedding != nil || d.EmbeddingModel != "" {
				t.Errorf("stale embedding stored: %+v", d)
			}
			st, err := embeddingsOf(t, b).Stale(bg, "t", "m", "", 10)
			if err != nil || !slices.Equal(docIDs(st), []string{"d"}) {
				t.Errorf("Stale = %v, %v", docIDs(st), err)
			}
		}},
		{"Cancel", func(t *testing.T) {
			srv := NewEmbeddingServer(t, nil)
			b := s.backend(t)
			embeddingsOf(t, b)
			var docs []recall.Doc
			for i := range 50 {
				docs = append(docs, recall.Doc{ID: fmt.Sprintf("d%02d", i), Tenant: "t", Text: fmt.Sprintf("text %d", i)})
			}
			upsert(t, b, docs...)
			ix := recall.New(b, recall.Options{Embedder: srv.Embedder(t, "m1")})
			ctx, cancel := context.WithCancel(bg)
			var batches atomic.Int64
			n, err := ix.Reembed(ctx, recall.ReembedOptions{Batch: 5, Progress: func(int) {
				if batches.Add(1) == 2 {
					cancel()
				}
			}})
			if !errors.Is(err, context.Canceled) || n != 10 {
				t.Errorf("cancelled Reembed = %d, %v; want 10, context.Canceled", n, err)
			}
			// Running again resumes with the rest.
			n, err = ix.Reembed(bg, recall.ReembedOptions{Batch: 100})
			if err != nil || n != 40 {
				t.Errorf("resumed Reembed = %d, %v; want 40", n, err)
			}
			job := ix.StartReembed(bg, recall.ReembedOptions{})
			job.Stop()
			if _, err := job.Wait(); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("stopped job: %v", err)
			}
		}},
	}
}
