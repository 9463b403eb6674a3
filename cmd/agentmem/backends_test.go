package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/testenv"
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

// A serving command's recall index finds a branch's inherited turns
// through its lineage: a fork indexes nothing; a search scoped to the
// branch finds the parent's documents up to the fork point, and none of
// the parent's later turns; once the parent is deleted, the branch's own
// copies (handed over by the store) are found instead. On SQLite and on
// PostgreSQL.
func TestMemoriesFollowLineage(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		memoriesFollowLineage(t, "sqlite://"+filepath.Join(t.TempDir(), "a.db"))
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		url := testenv.PostgresURL(t)
		sep := "?"
		if strings.Contains(url, "?") {
			sep = "&"
		}
		memoriesFollowLineage(t, url+sep+"schema="+testenv.FreshSchema(t, url))
	})
}

func memoriesFollowLineage(t *testing.T, url string) {
	ctx := context.Background()
	raw, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	m, err := openMemories(ctx, url, raw, embedFlags{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	f, stop, err := m.follow(raw, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	st := raw
	step := func(text string) agentmem.Step {
		return &agentmem.MessageStep{StepInfo: agentmem.StepInfo{ID: agentmem.NewID()}, Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(text)}}
	}
	for _, c := range []struct {
		id, parent string
		fork       int64
		texts      []string
	}{
		{"p", "", 0, []string{"the staging database", "the deploy key", "the parent's later turn"}},
		{"b", "p", 2, []string{"the branch's own turn"}},
	} {
		if _, err := st.Create(ctx, store.CreateRequest{ID: c.id, ParentID: c.parent, ForkSeq: c.fork}); err != nil {
			t.Fatal(err)
		}
		for _, text := range c.texts {
			if _, err := st.Append(ctx, store.AppendRequest{SessionID: c.id, Steps: []agentmem.Step{step(text)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	found := func(session, q string) []string {
		t.Helper()
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		hits, err := m.recall.Search(ctx, recall.Query{Text: q, K: 5, Filter: recall.Scope(session, "", "")})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range hits {
			if strings.Contains(h.Doc.Text, q) {
				ids = append(ids, h.Doc.ID)
			}
		}
		return ids
	}
	if got := found("b", "staging"); !slices.Equal(got, []string{"p#1"}) {
		t.Errorf("branch search for an inherited turn: %v, want p#1", got)
	}
	if got := found("b", "later turn"); len(got) != 0 {
		t.Errorf("branch search for the parent's turn after the fork: %v, want none", got)
	}
	if got := found("b", "own turn"); !slices.Equal(got, []string{"b#3"}) {
		t.Errorf("branch search for its own turn: %v, want b#3", got)
	}
	if docs, err := m.recall.Get(ctx, "", "b#1"); err == nil {
		t.Errorf("the fork indexed the inherited turn again: %+v", docs)
	}
	// The branch amends its inherited turn 2: its version is the
	// branch's, found in its search instead of the parent's.
	r, err := st.Read(ctx, store.ReadRequest{SessionID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	// amend replaces p's turn n, as session has it, by a copy with text.
	amend := func(session string, n int, text string) {
		t.Helper()
		c := agentmem.CloneStep(r.Entries[n-1].Step).(*agentmem.MessageStep)
		c.Message.Content = agentmem.Text(text)
		if _, err := st.Append(ctx, store.AppendRequest{SessionID: session, Compaction: &store.CompactionRecord{Amend: true, Replaced: []agentmem.Step{c}}}); err != nil {
			t.Fatal(err)
		}
	}
	amend("b", 2, "the rotated deploy key")
	if got := found("b", "rotated"); !slices.Equal(got, []string{"b#2"}) {
		t.Errorf("branch search for its amendment of an inherited turn: %v, want b#2", got)
	}
	if got := found("b", "the deploy key"); len(got) != 0 {
		t.Errorf("branch search for the parent's version of the turn it amended: %v, want none", got)
	}
	if got := found("p", "rotated"); len(got) != 0 {
		t.Errorf("parent search for its branch's amendment: %v, want none", got)
	}
	// The parent amends turn 1 after the fork: not the branch's.
	amend("p", 1, "the replica database")
	if got := found("p", "replica"); !slices.Equal(got, []string{"p#1"}) {
		t.Errorf("parent search for its amendment: %v, want p#1", got)
	}
	if got := found("b", "replica"); len(got) != 0 {
		t.Errorf("branch search for its parent's amendment after the fork: %v, want none", got)
	}
	if err := st.Delete(ctx, "", "p"); err != nil {
		t.Fatal(err)
	}
	if got := found("b", "staging"); !slices.Equal(got, []string{"b#1"}) {
		t.Errorf("branch search after the parent's deletion: %v, want b#1", got)
	}
	if got := found("b", "deploy key"); !slices.Equal(got, []string{"b#2"}) {
		t.Errorf("branch search after the parent's deletion: %v, want b#2", got)
	}
	if got := found("b", "rotated"); !slices.Equal(got, []string{"b#2"}) {
		t.Errorf("branch search for its amendment after the parent's deletion: %v, want b#2", got)
	}
}

// serve warns, at start, when the database acknowledges commits before
// they are durable (synchronous_commit = off), and only then.
func TestServeWarnsOfAsyncCommits(t *testing.T) {
	url := testenv.PostgresURL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	url += sep + "schema=" + testenv.FreshSchema(t, url)
	const warning = "the database acknowledges commits before they are durable"

	s := serve(t, nil, "--addr", "127.0.0.1:0", "--store", url)
	if strings.Contains(s.log.String(), warning) {
		t.Errorf("serve warned of asynchronous commits with synchronous_commit on:\n%s", s.log)
	}
	s = serve(t, nil, "--addr", "127.0.0.1:0", "--store", url+"&synchronous_commit=off")
	if log := s.log.String(); !strings.Contains(log, warning) || !strings.Contains(log, "servers=server") {
		t.Errorf("serve with synchronous_commit off did not warn, naming the server:\n%s", log)
	}
}
