package hierarchy_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/patterns/hierarchy"
)

// A hierarchical memory keeps an important fact in the core tier, demotes
// old steps to summarized episodic chunks, and recalls the chunk a query
// needs, all within one token budget.
func Example() {
	ctx := context.Background()
	m, err := hierarchy.Open(ctx, hierarchy.Options{WorkingMaxSteps: 4, DemoteBatch: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close(ctx)

	add := func(text string, importance float64) {
		if _, err := m.Add(ctx, &agentmem.ScratchpadStep{Content: text}, importance); err != nil {
			log.Fatal(err)
		}
	}
	_, _ = m.Add(ctx, &agentmem.SystemPromptStep{Content: "You are a release engineer."}, 0)
	_, _ = m.Add(ctx, &agentmem.TaskStep{Task: "Ship version 2.3."}, 0)
	add("Never deploy on Fridays.", 0.9) // core: always in context
	add("The changelog needs the migration notes.", 0)
	add("Migration 17 renames users.mail to users.email.", 0)
	add("Tagged the release candidate.", 0)
	add("CI is green on the release branch.", 0) // the working tier overflows
	add("Built the container image.", 0)
	add("Smoke tests passed on staging.", 0)

	for _, it := range m.Items(hierarchy.Episodic) {
		fmt.Printf("episodic %s covers %v\n", it.ID, it.Covers)
	}
	c, err := m.Context(ctx, "which column does the migration rename?", 400)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("core shown:", len(c.Core), "working steps:", c.Working.Steps)
	fmt.Println("recalled first:", c.Episodic[0].ID)
	fmt.Println("within budget:", c.Tokens <= 400, c.Tokens == c.CoreTokens+c.EpisodicTokens+c.Working.Tokens)
	// Output:
	// episodic chunk-3 covers [{3 4}]
	// episodic chunk-5 covers [{5 6}]
	// core shown: 1 working steps: [1 2 7 9 10]
	// recalled first: chunk-5
	// within budget: true true
}
