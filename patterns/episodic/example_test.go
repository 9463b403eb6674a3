package episodic_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/patterns/episodic"
)

// An assistant's history in episodes: starting one ends and summarizes the
// last, and a query recalls the relevant episode, ranked, with its summary.
func Example() {
	ctx := context.Background()
	mem, err := episodic.Open(ctx, episodic.Options{UserID: "ana", Agent: "assistant"})
	if err != nil {
		log.Fatal(err)
	}
	defer mem.Close(ctx)

	user := func(text string) {
		msg := agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(text)}
		if _, err := mem.Add(ctx, &agentmem.MessageStep{Message: msg}); err != nil {
			log.Fatal(err)
		}
	}
	_, _ = mem.Start(ctx, map[string]string{"title": "Kyoto trip"})
	user("Find a ryokan near Gion for the first week of April.")
	_, _ = mem.Start(ctx, map[string]string{"title": "Tax return"})
	user("The home office deduction needs the electricity bills.")
	ended, _ := mem.End(ctx)
	fmt.Println("ended:", ended.Metadata["title"])

	hits, err := mem.Recall(ctx, "where do we stay in Kyoto?", 1)
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range hits {
		fmt.Printf("recalled %q, summary:\n%s\n", h.Episode.Metadata["title"], h.Episode.Summary)
	}
	// Output:
	// ended: Tax return
	// recalled "Kyoto trip", summary:
	// #1 user: Find a ryokan near Gion for the first week of April.
}
