package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
)

// With an embedder, documents are written at once and embedded in the
// background, through outages of the embedding service.
func TestMemoriesEmbedInTheBackground(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" {
			http.NotFound(w, r)
			return
		}
		if down.Load() {
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusBadRequest)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "emb-1" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		out := struct {
			Data []item `json:"data"`
		}{}
		for i, s := range req.Input {
			out.Data = append(out.Data, item{Index: i, Embedding: []float32{float32(len(s)), 1, 0.5}})
		}
		json.NewEncoder(w).Encode(out)
	}))
	defer srv.Close()

	defer func(d time.Duration) { embedEvery = d }(embedEvery)
	embedEvery = 20 * time.Millisecond
	ctx := context.Background()
	url := "sqlite://" + filepath.Join(t.TempDir(), "a.db")
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m, err := openMemories(ctx, url, st, embedFlags{baseURL: srv.URL + "/v1", model: "emb-1"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// The service is down: the write succeeds, lexically searchable.
	if err := m.recall.Upsert(ctx, recall.Doc{ID: "d1", Text: "the staging database"}); err != nil {
		t.Fatal(err)
	}
	if hits, err := m.recall.Search(ctx, recall.Query{Text: "staging", K: 1}); err != nil || len(hits) != 1 {
		t.Fatalf("lexical search: %v %v", hits, err)
	}
	down.Store(false)
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := m.recall.Get(ctx, "", "d1")
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Embedding) == 3 && d.EmbeddingModel != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not embedded: %+v", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := openMemories(ctx, url, st, embedFlags{baseURL: srv.URL}, nil); err == nil {
		t.Error("--embed-base-url without --embed-model accepted")
	}
}
