package recalltest

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/agentmem/agentmem/llm"
	"github.com/agentmem/agentmem/recall"
)

// EmbeddingDims is the dimension of EmbeddingServer's vectors.
const EmbeddingDims = 64

// EmbeddingServer is a local OpenAI-compatible /v1/embeddings endpoint for
// tests: each input's vector is its analyzed terms (recall.Tokenize)
// hashed into EmbeddingDims buckets, so texts that share terms are close
// and the results are deterministic. Synonyms maps a term to another
// term whose bucket it also counts in, so a test can make texts with no
// term in common semantically close.
type EmbeddingServer struct {
	*httptest.Server
	// Synonyms: the term (analyzed) also counts as its synonym.
	Synonyms map[string]string
	// Requests counts the embeddings requests served.
	Requests atomic.Int64
	// Inputs counts the texts embedded.
	Inputs atomic.Int64
	// Fail, while set, makes the server answer 400.
	Fail atomic.Bool
}

// NewEmbeddingServer starts an EmbeddingServer, closed when the test ends.
func NewEmbeddingServer(t testing.TB, synonyms map[string]string) *EmbeddingServer {
	s := &EmbeddingServer{Synonyms: synonyms}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" {
			http.NotFound(w, r)
			return
		}
		if s.Fail.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":{"message":"failing on purpose","type":"invalid_request_error"}}`))
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.Requests.Add(1)
		s.Inputs.Add(int64(len(req.Input)))
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		resp := struct {
			Data  []item `json:"data"`
			Model string `json:"model"`
		}{Model: req.Model}
		for i, in := range req.Input {
			resp.Data = append(resp.Data, item{i, s.Vector(req.Model, in)})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(s.Close)
	return s
}

// Vector is the vector the server returns for a text and model: the
// model's name seeds the hash, so two models give different vectors.
func (s *EmbeddingServer) Vector(model, text string) []float32 {
	v := make([]float32, EmbeddingDims)
	add := func(term string) {
		h := fnv.New32a()
		h.Write([]byte(model + "\x00" + term))
		v[h.Sum32()%EmbeddingDims]++
	}
	for _, term := range recall.Tokenize(text) {
		add(term)
		if syn, ok := s.Synonyms[term]; ok {
			add(syn)
		}
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n > 0 {
		for i := range v {
			v[i] = float32(float64(v[i]) / math.Sqrt(n))
		}
	}
	return v
}

// Embedder returns an llm.Client, an agentmem.Embedder, for the model on
// this server.
func (s *EmbeddingServer) Embedder(t testing.TB, model string) *llm.Client {
	t.Helper()
	e, err := llm.New(llm.Config{BaseURL: s.URL + "/v1", EmbeddingModel: model, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func upsert(t *testing.T, b recall.Backend, docs ...recall.Doc) {
	t.Helper()
	if err := b.Upsert(bg, docs...); err != nil {
		t.Fatalf("Upsert: %v", err)
	}
}

func lexical(t *testing.T, b recall.Backend, tenant, query string, limit int, f recall.Filter) []string {
	t.Helper()
	ms, err := lexicalOf(t, b).Lexical(bg, recall.LexicalQuery{Tenant: tenant, Terms: recall.UniqueTerms(recall.Tokenize(query)), Filter: f, Limit: limit})
	if err != nil {
		t.Fatalf("Lexical(%q): %v", query, err)
	}
	return matchIDs(ms)
}

func matchIDs(ms []recall.Match) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func docIDs(ds []recall.Doc) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

func hitIDs(hs []recall.Hit) []string {
	out := []string{}
	for _, h := range hs {
		out = append(out, h.Doc.ID)
	}
	return out
}

func get(t *testing.T, b recall.Backend, tenant string, ids ...string) []recall.Doc {
	t.Helper()
	ds, err := b.Get(bg, tenant, ids...)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return ds
}

// count returns how many documents of the tenant hold a term of the
// query (a lexical search for everything).
func count(t *testing.T, b recall.Backend, tenant, query string) int {
	t.Helper()
	return len(lexical(t, b, tenant, query, 10000, recall.Filter{}))
}

// lexicalOf returns b's lexical search (recall.CapabilitiesOf); the test
// is skipped for a backend without one.
func lexicalOf(t testing.TB, b recall.Backend) recall.LexicalSearcher {
	return capability(t, b, recall.CapabilitiesOf(b).Lexical, "lexical search")
}

// vectorOf returns b's vector search; the test is skipped for a backend
// without one.
func vectorOf(t testing.TB, b recall.Backend) recall.VectorSearcher {
	return capability(t, b, recall.CapabilitiesOf(b).Vector, "vector search")
}

// embeddingsOf returns b's embedding store; the test is skipped for a
// backend without one.
func embeddingsOf(t testing.TB, b recall.Backend) recall.EmbeddingStore {
	return capability(t, b, recall.CapabilitiesOf(b).Embeddings, "embedding store")
}

// scannerOf returns b's scanner; the test is skipped for a backend
// without one.
func scannerOf(t testing.TB, b recall.Backend) recall.Scanner {
	return capability(t, b, recall.CapabilitiesOf(b).Scan, "scanner")
}

// capability returns c, a capability of b, or skips the test when b has
// none (c is nil), saying which: what is missing.
func capability[C any](t testing.TB, b recall.Backend, c C, what string) C {
	t.Helper()
	if any(c) == nil {
		t.Skipf("%T has no %s", b, what)
	}
	return c
}
