package sessions

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

// TestContextInjects: a context request that asks for facts and recalled
// turns gets them in its system prompt, each within its share of the
// budget, which the steps leave out; the turns of the session itself are
// not recalled into it.
func TestContextInjects(t *testing.T) {
	ctx := context.Background()
	fm := facts.New(facts.NewMemStore(), facts.Options{})
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	st := memstore.New(memstore.Options{})
	svc, err := New(Config{Store: st, Facts: fm, Recall: ix})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(ctx, store.CreateRequest{ID: "s", UserID: "ann"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AppendMessages(ctx, MessagesRequest{SessionID: "s", Messages: []agentmem.Message{
		{Role: agentmem.RoleSystem, Content: agentmem.Text("You are a travel agent.")},
		{Role: agentmem.RoleUser, Content: agentmem.Text("Where should I travel in spring?")},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := fm.Remember(ctx, facts.RememberRequest{UserID: "ann", Text: "Ann prefers trains to planes"}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Upsert(ctx,
		recall.Doc{ID: "other/1", Text: "In spring we travel to Kyoto for the blossoms", Group: "other", Metadata: map[string]string{recall.MetaUser: "ann"}},
		recall.Doc{ID: "s/9", Text: "spring travel plans of this very session", Group: "s", Metadata: map[string]string{recall.MetaUser: "ann"}},
	); err != nil {
		t.Fatal(err)
	}
	plain, err := svc.Context(ctx, ContextRequest{SessionID: "s", Budget: 4000})
	if err != nil {
		t.Fatal(err)
	}
	c, err := svc.Context(ctx, ContextRequest{SessionID: "s", Budget: 4000,
		Facts:  &FactsRequest{K: 3, Share: 0.1},
		Recall: &RecallRequest{K: 3, Share: 0.2}})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Fit != 4000 || c.Fit != 4000-400-800 {
		t.Errorf("steps fitted to %d and %d, want 4000 and 2800 (the shares kept out)", plain.Fit, c.Fit)
	}
	sys := c.Messages[0].Text()
	if !strings.Contains(sys, "Ann prefers trains") || !strings.Contains(sys, facts.DefaultHeader) {
		t.Errorf("the system prompt lacks the fact: %q", sys)
	}
	if !strings.Contains(sys, RecallHeader) || !strings.Contains(sys, "Kyoto") || strings.Contains(sys, "this very session") {
		t.Errorf("the system prompt's recalled turns: %q", sys)
	}
	if len(c.Facts) != 1 || len(c.Recalled) != 1 || c.Recalled[0] != "other/1" {
		t.Errorf("facts %v, recalled %v", c.Facts, c.Recalled)
	}
	if c.Tokens <= plain.Tokens || c.Tokens > 4000 {
		t.Errorf("tokens %d with the injections, %d without, budget 4000", c.Tokens, plain.Tokens)
	}
	if plain.Facts != nil || plain.Messages[0].Text() != "You are a travel agent." {
		t.Errorf("a request without injections: facts %v, system %q", plain.Facts, plain.Messages[0].Text())
	}

	// A session without a user has no facts.
	if _, err := svc.Create(ctx, store.CreateRequest{ID: "anon"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AppendMessages(ctx, MessagesRequest{SessionID: "anon", Messages: []agentmem.Message{{Role: agentmem.RoleUser, Content: agentmem.Text("hi")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Context(ctx, ContextRequest{SessionID: "anon", Facts: &FactsRequest{K: 1}}); !errors.Is(err, ErrNoUser) {
		t.Errorf("facts for a session without a user: %v, want ErrNoUser", err)
	}
	// A service without facts or recall refuses to inject them.
	bare, err := New(Config{Store: st, Facts: (*facts.Memory)(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if bare.Features().Facts || bare.Features().Recall {
		t.Error("a service given a nil *facts.Memory has facts")
	}
	for _, req := range []ContextRequest{{SessionID: "s", Facts: &FactsRequest{K: 1}}, {SessionID: "s", Recall: &RecallRequest{K: 1}}} {
		var ie *agentmem.InvalidError
		if _, err := bare.Context(ctx, req); !errors.As(err, &ie) {
			t.Errorf("an injection the service cannot make: %v, want an *agentmem.InvalidError", err)
		}
	}
}
