package eino_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/agentmem"
	amem "github.com/agentmem/agentmem/adapters/eino"
	"github.com/agentmem/agentmem/adapters/internal/servertest"
	"github.com/agentmem/agentmem/client"
	"github.com/cloudwego/eino/callbacks"
	"github.com/cloudwego/eino/components/retriever"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

func TestRetrieve(t *testing.T) {
	ctx := context.Background()
	srv := servertest.New(t)
	if err := servertest.Seed(ctx, srv.Client); err != nil {
		t.Fatal(err)
	}
	r, err := amem.NewRetriever(srv.Client, client.RecallQuery{K: 1, Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := r.Retrieve(ctx, "staging database port")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 || docs[0].ID != "runbook-db" || docs[0].Content != "The staging database listens on port 5433." ||
		docs[0].MetaData["source"] != "runbook" || docs[0].Score() <= 0 || docs[0].MetaData["score"] != docs[0].Score() {
		t.Fatalf("documents %+v", docs)
	}

	// Eino's options: TopK, Index (the scope), ScoreThreshold; agentmem's:
	// the window of turns.
	docs, err = r.Retrieve(ctx, "dog thunderstorms", retriever.WithTopK(5), retriever.WithIndex("session:chat-1"), amem.WithWindow(0, 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 || docs[0].MetaData["session_id"] != "chat-1" || !strings.Contains(docs[0].Content, "quiet room") {
		t.Fatalf("turn documents %+v", docs)
	}
	for _, d := range docs {
		if d.MetaData["session_id"] != "chat-1" {
			t.Errorf("a document out of scope: %+v", d)
		}
	}
	all, err := r.Retrieve(ctx, "staging database port deploys", retriever.WithTopK(10))
	if err != nil || len(all) < 2 {
		t.Fatalf("all: %+v, %v", all, err)
	}
	threshold := (all[0].Score() + all[len(all)-1].Score()) / 2
	some, err := r.Retrieve(ctx, "staging database port deploys", retriever.WithTopK(10), retriever.WithScoreThreshold(threshold))
	if err != nil || len(some) == 0 || len(some) >= len(all) {
		t.Fatalf("with a threshold between the scores: %d of %d documents, %v", len(some), len(all), err)
	}
	for _, d := range some {
		if d.Score() < threshold {
			t.Errorf("a document under the threshold: %+v", d)
		}
	}

	// Bad input is the server's 400, as agentmem.ErrInvalid.
	if _, err := r.Retrieve(ctx, ""); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("an empty query: %v, want ErrInvalid", err)
	}
	if _, err := r.Retrieve(ctx, "x", retriever.WithIndex("planet:earth")); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("an unknown scope: %v, want ErrInvalid", err)
	}
	if _, err := amem.NewRetriever(nil, client.RecallQuery{}); err == nil {
		t.Error("no client: no error")
	}
}

// TestInChain runs the retriever as a node of an eino chain, with the
// call's options and callbacks given to the chain.
func TestInChain(t *testing.T) {
	ctx := context.Background()
	srv := servertest.New(t)
	if err := servertest.Seed(ctx, srv.Client); err != nil {
		t.Fatal(err)
	}
	r, err := amem.NewRetriever(srv.Client, client.RecallQuery{Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	chain, err := compose.NewChain[string, []*schema.Document]().AppendRetriever(r).Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var starts []*retriever.CallbackInput
	var ends []*retriever.CallbackOutput
	var errs []error
	handler := callbacks.NewHandlerBuilder().
		OnStartFn(func(ctx context.Context, info *callbacks.RunInfo, in callbacks.CallbackInput) context.Context {
			if info.Type == "Agentmem" {
				mu.Lock()
				starts = append(starts, retriever.ConvCallbackInput(in))
				mu.Unlock()
			}
			return ctx
		}).
		OnEndFn(func(ctx context.Context, info *callbacks.RunInfo, out callbacks.CallbackOutput) context.Context {
			if info.Type == "Agentmem" {
				mu.Lock()
				ends = append(ends, retriever.ConvCallbackOutput(out))
				mu.Unlock()
			}
			return ctx
		}).
		OnErrorFn(func(ctx context.Context, info *callbacks.RunInfo, err error) context.Context {
			if info.Type == "Agentmem" {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return ctx
		}).Build()

	docs, err := chain.Invoke(ctx, "staging database port", compose.WithCallbacks(handler),
		compose.WithRetrieverOption(retriever.WithTopK(1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 || docs[0].ID != "runbook-db" {
		t.Fatalf("chain output %+v", docs)
	}
	mu.Lock()
	if len(starts) != 1 || starts[0] == nil || starts[0].Query != "staging database port" || starts[0].TopK != 1 {
		t.Errorf("start callbacks %+v", starts)
	}
	if len(ends) != 1 || ends[0] == nil || len(ends[0].Docs) != 1 || ends[0].Docs[0].ID != "runbook-db" {
		t.Errorf("end callbacks %+v", ends)
	}
	mu.Unlock()

	if _, err := chain.Invoke(ctx, "", compose.WithCallbacks(handler)); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("an empty query through the chain: %v, want ErrInvalid", err)
	}
	mu.Lock()
	if len(errs) != 1 || !errors.Is(errs[0], agentmem.ErrInvalid) {
		t.Errorf("error callbacks %v", errs)
	}
	mu.Unlock()
}
