package eino_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agentmem/agentmem/adapters/eino"
	"github.com/agentmem/agentmem/adapters/internal/servertest"
	"github.com/agentmem/agentmem/client"
	"github.com/cloudwego/eino/components/retriever"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// The retriever as the node of an eino chain.
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
	r, err := eino.NewRetriever(c, client.RecallQuery{K: 5})
	if err != nil {
		log.Fatal(err)
	}
	chain, err := compose.NewChain[string, []*schema.Document]().AppendRetriever(r).Compile(ctx)
	if err != nil {
		log.Fatal(err)
	}
	docs, err := chain.Invoke(ctx, "how long do refunds take", compose.WithRetrieverOption(retriever.WithTopK(1)))
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range docs {
		fmt.Println(d.ID, d.Content)
	}
	// Output:
	// faq-1 Refunds take five business days.
}
