package facts_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/tokenizer"
)

// A fact is reinforced when it is seen again, decays when it is not, and
// is superseded, never deleted, when it is contradicted.
func Example() {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	mem := facts.New(facts.NewMemStore(), facts.Options{
		Clock: func() time.Time { return now },
		Decay: facts.Decay{HalfLife: 30 * 24 * time.Hour, Floor: 0.2},
	})

	r, _ := mem.Remember(ctx, facts.RememberRequest{UserID: "alice", Text: "Lives in Berlin.", Confidence: 0.8})
	fmt.Println(r.Outcome, r.Fact.Text)

	now = now.Add(30 * 24 * time.Hour) // one half-life later
	fmt.Printf("after a month: %.2f\n", mem.Confidence(r.Fact))

	r, _ = mem.Remember(ctx, facts.RememberRequest{UserID: "alice", Text: "lives in berlin"})
	fmt.Printf("%s: %.2f\n", r.Outcome, r.Fact.Confidence)

	s, _ := mem.Supersede(ctx, facts.SupersedeRequest{ID: r.Fact.ID, Text: "Lives in Paris.", By: "alice", Reason: "moved"})
	chain, _ := mem.History(ctx, "", s.Fact.ID)
	for _, f := range chain {
		fmt.Printf("%s valid=%v\n", f.Text, f.Valid())
	}
	// Output:
	// added Lives in Berlin.
	// after a month: 0.50
	// reinforced: 0.79
	// Lives in Berlin. valid=false
	// Lives in Paris. valid=true
}

// Search ranks a user's facts by relevance to the query times confidence.
func ExampleMemory_Search() {
	ctx := context.Background()
	mem := facts.New(facts.NewMemStore(), facts.Options{})
	for _, text := range []string{"Is vegetarian.", "Cooks on an induction stove.", "Works night shifts as a nurse."} {
		mem.Remember(ctx, facts.RememberRequest{UserID: "bob", Text: text})
	}
	hits, _ := mem.Search(ctx, facts.SearchRequest{UserID: "bob", Query: "which stove does he cook on?"})
	for _, h := range hits {
		fmt.Printf("%s relevance=%.2f confidence=%.2f\n", h.Fact.Text, h.Relevance, h.Confidence)
	}
	// Output:
	// Cooks on an induction stove. relevance=1.00 confidence=0.70
}

// Inject adds the relevant facts to the system prompt within a share of
// the token budget, counted exactly.
func ExampleMemory_Inject() {
	ctx := context.Background()
	mem := facts.New(facts.NewMemStore(), facts.Options{})
	mem.Remember(ctx, facts.RememberRequest{UserID: "bob", Text: "Is vegetarian."})

	counter, _ := tokenizer.Get(tokenizer.O200kBase)
	msgs := []agentmem.Message{
		{Role: agentmem.RoleSystem, Content: agentmem.Text("You are a cooking assistant.")},
		{Role: agentmem.RoleUser, Content: agentmem.Text("What should I cook tonight?")},
	}
	out, inj, _ := mem.Inject(ctx, msgs, facts.InjectOptions{UserID: "bob", Budget: 8000, Counter: counter})
	fmt.Println(out[0].Text())
	fmt.Println(inj.Tokens, "tokens of", inj.Allowance)
	// Output:
	// You are a cooking assistant.
	//
	// Known facts about the user (from earlier conversations; they may be out of date):
	// - Is vegetarian.
	// 21 tokens of 800
}

// The agent can manage its memory of the user itself through tools.
func ExampleToolbox() {
	ctx := context.Background()
	tb := &facts.Toolbox{Memory: facts.New(facts.NewMemStore(), facts.Options{}), UserID: "carol", Source: facts.Source{Agent: "assistant"}}
	for _, t := range tb.Tools() {
		fmt.Println(t.Name)
	}
	out, _ := tb.Call(ctx, facts.ToolRemember, `{"text":"Prefers metric units."}`)
	fmt.Println(out[:len("remembered")])
	out, _ = tb.Call(ctx, facts.ToolRecall, `{"query":"units"}`)
	fmt.Println(out[len(out)-len("Prefers metric units. (confidence 0.70)"):])
	// Output:
	// remember
	// recall
	// forget
	// remembered
	// Prefers metric units. (confidence 0.70)
}
