package recall_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentmem/agentmem/recall"
)

// The backends of this module have every capability.
func TestMemoryHasEveryCapability(t *testing.T) {
	c := recall.CapabilitiesOf(recall.NewMemory(recall.MemoryOptions{}))
	if c.Lexical == nil || c.Vector == nil || c.Embeddings == nil || c.Scan == nil {
		t.Fatalf("CapabilitiesOf(Memory) = %+v, want every capability", c)
	}
}

// docsOnly is a backend that stores documents and can do nothing else:
// embedding the Backend interface hides the Memory's other methods.
type docsOnly struct{ recall.Backend }

// lexicalOnly has a lexical index but no vector search nor embedding
// store.
type lexicalOnly struct {
	recall.Backend
	recall.LexicalSearcher
}

// vectorOnly has a vector index but no lexical one.
type vectorOnly struct {
	recall.Backend
	recall.VectorSearcher
}

// topicEmbedder embeds a text by the topics it names, counting its calls.
type topicEmbedder struct {
	calls atomic.Int32
	fail  bool
}

func (e *topicEmbedder) EmbeddingModel() string { return "topics-1" }

func (e *topicEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.calls.Add(1)
	if e.fail {
		return nil, errors.New("503 service unavailable")
	}
	out := make([][]float32, len(texts))
	for i, text := range texts {
		v := []float32{0.01, 0.01, 0.01}
		for j, topic := range []string{"food", "travel", "code"} {
			if strings.Contains(strings.ToLower(text), topic) {
				v[j] = 1
			}
		}
		out[i] = v
	}
	return out, nil
}

var capDocs = []recall.Doc{
	{ID: "f", Tenant: "t", Text: "a note about food: pasta on Fridays"},
	{ID: "v", Tenant: "t", Text: "a note about travel: Lisbon in May"},
	{ID: "c", Tenant: "t", Text: "a note about code: Go generics"},
}

// A backend that only stores documents still stores them, and refuses,
// as unsupported, the searches and the re-embedding it cannot serve.
func TestIndexOverDocumentsOnly(t *testing.T) {
	ctx := context.Background()
	mem := recall.NewMemory(recall.MemoryOptions{})
	b := docsOnly{mem}
	if c := recall.CapabilitiesOf(b); c != (recall.Capabilities{}) {
		t.Fatalf("CapabilitiesOf(a wrapper) = %+v, want only what the wrapper implements", c)
	}
	ix := recall.New(b, recall.Options{Embedder: &topicEmbedder{}})
	if err := ix.Upsert(ctx, capDocs...); err != nil {
		t.Fatal(err)
	}
	if d, err := ix.Get(ctx, "t", "f"); err != nil || d.Text != capDocs[0].Text {
		t.Fatalf("Get = %+v, %v", d, err)
	}
	for name, q := range map[string]recall.Query{
		"text":         {Tenant: "t", Text: "food", K: 1},
		"tfidf":        {Tenant: "t", Text: "food", K: 1, Similarity: recall.TFIDF},
		"query vector": {Tenant: "t", Embedding: []float32{1, 0, 0}, K: 1},
	} {
		if _, err := ix.Search(ctx, q); !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("Search by %s: %v, want ErrUnsupported", name, err)
		}
	}
	if _, err := ix.Reembed(ctx, recall.ReembedOptions{}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Reembed: %v, want ErrUnsupported", err)
	}
}

// Without vector search, a text search ranks lexically and does not
// embed the query; a query vector is refused.
func TestIndexWithoutVectorSearch(t *testing.T) {
	ctx := context.Background()
	mem := recall.NewMemory(recall.MemoryOptions{})
	emb := &topicEmbedder{}
	ix := recall.New(lexicalOnly{mem, mem}, recall.Options{Embedder: emb, DeferEmbedding: true})
	if err := ix.Upsert(ctx, capDocs...); err != nil {
		t.Fatal(err)
	}
	hits, err := ix.Search(ctx, recall.Query{Tenant: "t", Text: "Lisbon", K: 1})
	if err != nil || len(hits) != 1 || hits[0].Doc.ID != "v" {
		t.Fatalf("lexical Search = %+v, %v; want v", hits, err)
	}
	if n := emb.calls.Load(); n != 0 {
		t.Errorf("the query was embedded (%d calls) for a backend that cannot search by vector", n)
	}
	if _, err := ix.Search(ctx, recall.Query{Tenant: "t", Embedding: []float32{1, 0, 0}, K: 1}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Search by a query vector: %v, want ErrUnsupported", err)
	}
}

// Without a lexical index, a text search ranks by the vectors of the
// Embedder, and fails when the Embedder does, having nothing to fall
// back on; TF-IDF is refused.
func TestIndexWithoutLexicalSearch(t *testing.T) {
	ctx := context.Background()
	mem := recall.NewMemory(recall.MemoryOptions{})
	emb := &topicEmbedder{}
	ix := recall.New(vectorOnly{mem, mem}, recall.Options{Embedder: emb})
	if err := ix.Upsert(ctx, capDocs...); err != nil {
		t.Fatal(err)
	}
	// With no lexical index, the hit can only come from the vectors.
	hits, err := ix.Search(ctx, recall.Query{Tenant: "t", Text: "my travel plans", K: 1})
	if err != nil || len(hits) != 1 || hits[0].Doc.ID != "v" {
		t.Fatalf("vector Search = %+v, %v; want v", hits, err)
	}
	if _, err := ix.Search(ctx, recall.Query{Tenant: "t", Text: "food", K: 1, Similarity: recall.TFIDF}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("TF-IDF Search: %v, want ErrUnsupported", err)
	}
	emb.fail = true
	if _, err := ix.Search(ctx, recall.Query{Tenant: "t", Text: "food", K: 1}); err == nil {
		t.Error("Search with the Embedder down and no lexical index succeeded; want its error")
	}
	noEmbedder := recall.New(vectorOnly{mem, mem}, recall.Options{})
	if _, err := noEmbedder.Search(ctx, recall.Query{Tenant: "t", Text: "food", K: 1}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("text Search with nothing to embed it: %v, want ErrUnsupported", err)
	}
}
