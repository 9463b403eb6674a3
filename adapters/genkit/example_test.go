package genkit_test

import (
	"context"
	"fmt"
	"log"

	amgenkit "github.com/agentmem/agentmem/adapters/genkit"
	"github.com/agentmem/agentmem/adapters/internal/servertest"
	"github.com/agentmem/agentmem/client"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// A Genkit retriever over agentmem's recall.
func Example() {
	ctx := context.Background()
	// An agentmem server in process, standing in for `agentmem serve`
	// at http://127.0.0.1:8080.
	srv, err := servertest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	// Documents in its recall index, among them "faq-1".
	if err := servertest.Seed(ctx, srv.Client); err != nil {
		log.Fatal(err)
	}

	c, err := client.New(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	g := genkit.Init(ctx)
	r, err := amgenkit.DefineRetriever(g, "agentmem/recall", c, client.RecallQuery{K: 5})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := genkit.Retrieve(ctx, g, ai.WithRetriever(r), ai.WithTextDocs("how long do refunds take"),
		ai.WithConfig(&amgenkit.RetrieverOptions{K: 1}))
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range resp.Documents {
		fmt.Println(d.Metadata["id"], d.Content[0].Text)
	}
	// Output:
	// faq-1 Refunds take five business days.
}
