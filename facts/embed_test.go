package facts

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

// switchEmbedder embeds by a few topic words, until it is switched off.
type switchEmbedder struct{ down atomic.Bool }

func (e *switchEmbedder) EmbeddingModel() string { return "topics-1" }

func (e *switchEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	if e.down.Load() {
		return nil, errors.New("embeddings: 503 service unavailable")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		t = strings.ToLower(t)
		v := []float32{0.01, 0.01, 0.01}
		for j, w := range []string{"food", "city", "code"} {
			if strings.Contains(t, w) {
				v[j] = 1
			}
		}
		out[i] = v
	}
	return out, nil
}

// With an embedder, relevance is the vectors' cosine; while the
// embedding service is down, search falls back to lexical relevance
// instead of failing (so prompt injection keeps working).
func TestSearchWithEmbedderOutage(t *testing.T) {
	ctx := context.Background()
	emb := &switchEmbedder{}
	m := New(NewMemStore(), Options{Embedder: emb})
	for _, text := range []string{"Likes spicy food", "Lives in a big city", "Writes Go code daily"} {
		if _, err := m.Remember(ctx, RememberRequest{UserID: "u", Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	hits, err := m.Search(ctx, SearchRequest{UserID: "u", Query: "favourite food", K: 1})
	if err != nil || len(hits) != 1 || hits[0].Fact.Text != "Likes spicy food" || hits[0].Relevance < 0.9 {
		t.Fatalf("vector search: %v %+v", err, hits)
	}
	emb.down.Store(true)
	hits, err = m.Search(ctx, SearchRequest{UserID: "u", Query: "which city", K: 1})
	if err != nil || len(hits) != 1 || hits[0].Fact.Text != "Lives in a big city" {
		t.Fatalf("search during the outage: %v %+v", err, hits)
	}
	if _, err := m.Remember(ctx, RememberRequest{UserID: "u", Text: "Has a cat"}); err == nil {
		t.Error("a fact was remembered without its embedding during the outage")
	}
}
