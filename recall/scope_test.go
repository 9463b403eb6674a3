package recall_test

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
)

func TestParseScope(t *testing.T) {
	for in, want := range map[string]map[string]string{
		"":           nil,
		"session:s1": {recall.MetaSession: "s1"},
		"user:alice": {recall.MetaUser: "alice"},
		"agent:a:b":  {recall.MetaAgent: "a:b"},
		"team:x":     {"bad": ""},
		"user:":      {"bad": ""},
		"alice":      {"bad": ""},
		":x":         {"bad": ""},
	} {
		f, err := recall.ParseScope(in)
		if _, bad := want["bad"]; bad {
			var inv *agentmem.InvalidError
			if !errors.As(err, &inv) || inv.Field != "scope" {
				t.Errorf("ParseScope(%q): %v, want an invalid scope", in, err)
			}
			continue
		}
		if err != nil || !maps.Equal(f.Metadata, want) {
			t.Errorf("ParseScope(%q) = %v, %v", in, f.Metadata, err)
		}
	}
}

// failingEmbedder is an embedding service that is down.
type failingEmbedder struct{}

func (failingEmbedder) EmbeddingModel() string { return "down-1" }
func (failingEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("503 service unavailable")
}

// An outage of the embedding service degrades search to lexical ranking
// instead of failing it.
func TestSearchSurvivesEmbedderOutage(t *testing.T) {
	ctx := context.Background()
	var reported []error
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{
		Embedder: failingEmbedder{}, DeferEmbedding: true,
		OnEmbedError: func(_ context.Context, err error) { reported = append(reported, err) },
	})
	if err := ix.Upsert(ctx, recall.Doc{ID: "a", Text: "the staging database listens on 5433"}, recall.Doc{ID: "b", Text: "lunch is at noon"}); err != nil {
		t.Fatal(err)
	}
	hits, err := ix.Search(ctx, recall.Query{Text: "staging database port", K: 2})
	if err != nil || len(hits) == 0 || hits[0].Doc.ID != "a" {
		t.Fatalf("search during the outage: %v %+v", err, hits)
	}
	if len(reported) != 1 {
		t.Errorf("reported %v", reported)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ix.Search(cctx, recall.Query{Text: "staging", K: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled search: %v", err)
	}
}
