package genkit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	amgenkit "github.com/agentmem/agentmem/adapters/genkit"
	"github.com/agentmem/agentmem/adapters/internal/servertest"
	"github.com/agentmem/agentmem/client"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core"
	"github.com/firebase/genkit/go/genkit"
)

func text(d *ai.Document) string {
	var b strings.Builder
	for _, p := range d.Content {
		b.WriteString(p.Text)
	}
	return b.String()
}

// TestRetrieve registers the retriever with Genkit and retrieves through
// Genkit's own calls, by the retriever and by its name.
func TestRetrieve(t *testing.T) {
	ctx := context.Background()
	srv := servertest.New(t)
	if err := servertest.Seed(ctx, srv.Client); err != nil {
		t.Fatal(err)
	}
	g := genkit.Init(ctx)
	r, err := amgenkit.DefineRetriever(g, "agentmem/recall", srv.Client, client.RecallQuery{K: 1, Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := genkit.Retrieve(ctx, g, ai.WithRetriever(r), ai.WithTextDocs("staging database port"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Documents) != 1 {
		t.Fatalf("%d documents, want K=1", len(resp.Documents))
	}
	d := resp.Documents[0]
	if text(d) != "The staging database listens on port 5433." || d.Metadata["id"] != "runbook-db" || d.Metadata["source"] != "runbook" {
		t.Errorf("document %q %v", text(d), d.Metadata)
	}
	if s, _ := d.Metadata["score"].(float64); s <= 0 {
		t.Errorf("score %v", d.Metadata["score"])
	}

	// By name, with options: a struct, then the JSON object Genkit's
	// developer UI sends.
	if genkit.LookupRetriever(g, "agentmem/recall") == nil {
		t.Fatal("the retriever is not registered")
	}
	for name, cfg := range map[string]any{
		"struct": &amgenkit.RetrieverOptions{K: 3, Scope: "session:chat-1", After: 1},
		"json":   map[string]any{"k": 3, "scope": "session:chat-1", "after": 1},
	} {
		resp, err := genkit.Retrieve(ctx, g, ai.WithRetrieverName("agentmem/recall"), ai.WithTextDocs("dog thunderstorms"), ai.WithConfig(cfg))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(resp.Documents) == 0 {
			t.Fatalf("%s: no documents", name)
		}
		for _, d := range resp.Documents {
			if d.Metadata["session_id"] != "chat-1" {
				t.Errorf("%s: a document out of scope: %v", name, d.Metadata)
			}
		}
		if d := resp.Documents[0]; !strings.Contains(text(d), "afraid of thunderstorms") || !strings.Contains(text(d), "quiet room") {
			t.Errorf("%s: the window %q", name, text(d))
		}
	}

	// Bad input.
	for name, opts := range map[string][]ai.RetrieverOption{
		"empty query":   {ai.WithTextDocs("")},
		"unknown scope": {ai.WithTextDocs("x"), ai.WithConfig(&amgenkit.RetrieverOptions{Scope: "planet:earth"})},
	} {
		_, err := genkit.Retrieve(ctx, g, append(opts, ai.WithRetriever(r))...)
		if !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	// Options the retriever does not have are refused by Genkit itself,
	// by the schema the retriever declares.
	_, err = genkit.Retrieve(ctx, g, ai.WithRetriever(r), ai.WithTextDocs("x"), ai.WithConfig(map[string]any{"top_k": 3}))
	var ge *core.GenkitError
	if !errors.As(err, &ge) || ge.Status != core.INVALID_ARGUMENT || !strings.Contains(ge.Message, "top_k") {
		t.Errorf("an unknown option: %v, want Genkit's INVALID_ARGUMENT", err)
	}
	if _, err := amgenkit.NewRetriever("x", nil, client.RecallQuery{}); err == nil {
		t.Error("no client: no error")
	}
	if _, err := amgenkit.NewRetriever("", srv.Client, client.RecallQuery{}); err == nil {
		t.Error("no name: no error")
	}
}

// TestNewRetriever uses a retriever that is not registered.
func TestNewRetriever(t *testing.T) {
	ctx := context.Background()
	srv := servertest.New(t)
	if err := servertest.Seed(ctx, srv.Client); err != nil {
		t.Fatal(err)
	}
	r, err := amgenkit.NewRetriever("recall", srv.Client, client.RecallQuery{K: 2, Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Retrieve(ctx, &ai.RetrieverRequest{Query: ai.DocumentFromText("deploy day", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Documents) == 0 || resp.Documents[0].Metadata["id"] != "runbook-deploy" {
		t.Errorf("documents %+v", resp.Documents)
	}
	if _, err := r.Retrieve(ctx, &ai.RetrieverRequest{}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("no query: %v, want ErrInvalid", err)
	}
}
