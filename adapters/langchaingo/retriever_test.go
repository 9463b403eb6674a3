package langchaingo_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/adapters/internal/servertest"
	amlc "github.com/agentmem/agentmem/adapters/langchaingo"
	"github.com/agentmem/agentmem/client"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/schema"
)

func TestRetriever(t *testing.T) {
	ctx := context.Background()
	srv := servertest.New(t)
	if err := servertest.Seed(ctx, srv.Client); err != nil {
		t.Fatal(err)
	}

	r, err := amlc.NewRetriever(srv.Client, client.RecallQuery{K: 1, Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := r.GetRelevantDocuments(ctx, "staging database port")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 {
		t.Fatalf("%d documents, want K=1: %+v", len(docs), docs)
	}
	d := docs[0]
	if d.PageContent != "The staging database listens on port 5433." || d.Score <= 0 ||
		d.Metadata["id"] != "runbook-db" || d.Metadata["source"] != "runbook" {
		t.Errorf("document %+v", d)
	}
	if s, ok := d.Metadata["score"].(float64); !ok || float32(s) != d.Score {
		t.Errorf("document %+v", d)
	}

	// A conversation turn, scoped to its session, with the turn after it.
	r, err = amlc.NewRetriever(srv.Client, client.RecallQuery{K: 1, Scope: "session:chat-1", After: 1, Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	docs, err = r.GetRelevantDocuments(ctx, "dog thunderstorms")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 {
		t.Fatalf("turn search: %+v", docs)
	}
	d = docs[0]
	if d.Metadata["session_id"] != "chat-1" || d.Metadata["step"] != int64(1) ||
		!strings.Contains(d.PageContent, "afraid of thunderstorms") || !strings.Contains(d.PageContent, "quiet room") {
		t.Errorf("turn document %+v", d)
	}
	if w, _ := d.Metadata["window"].([]string); len(w) != 2 {
		t.Errorf("window %v, want the hit and the turn after it", d.Metadata["window"])
	}

	// Bad input is the server's 400, as agentmem.ErrInvalid.
	if _, err := r.GetRelevantDocuments(ctx, ""); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("an empty query: %v, want ErrInvalid", err)
	}
	bad, _ := amlc.NewRetriever(srv.Client, client.RecallQuery{Scope: "planet:earth"})
	if _, err := bad.GetRelevantDocuments(ctx, "x"); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("an unknown scope: %v, want ErrInvalid", err)
	}
	if _, err := amlc.NewRetriever(nil, client.RecallQuery{}); err == nil {
		t.Error("no client: no error")
	}
}

// TestRetrievalQAChain runs langchaingo's RetrievalQA chain over the
// retriever: the model's prompt holds what recall found.
func TestRetrievalQAChain(t *testing.T) {
	ctx := context.Background()
	srv := servertest.New(t)
	if err := servertest.Seed(ctx, srv.Client); err != nil {
		t.Fatal(err)
	}
	r, err := amlc.NewRetriever(srv.Client, client.RecallQuery{K: 2, Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	var _ schema.Retriever = r
	llm := newRecorder("Port 5433.")
	qa := chains.NewRetrievalQAFromLLM(llm, r)
	out, err := chains.Run(ctx, qa, "Which port does the staging database use?")
	if err != nil || out != "Port 5433." {
		t.Fatalf("Run: %q, %v", out, err)
	}
	if p := llm.prompt(0); !strings.Contains(p, "The staging database listens on port 5433.") || !strings.Contains(p, "Which port does the staging database use?") {
		t.Errorf("the prompt lacks the retrieved document:\n%s", p)
	}
}
