package client_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/store/memstore"
)

// startServer starts what `agentmem serve` runs, on a loopback port, for
// the examples.
func startServer() *httptest.Server {
	srv, err := server.New(server.Config{Store: memstore.New(memstore.Options{}), Blocks: blocks.New(blocks.NewMemStore(), blocks.Options{}),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	return httptest.NewServer(srv)
}

// The context of a session that fits a token budget, rendered by the
// server.
func ExampleClient_Context() {
	ts := startServer()
	defer ts.Close()
	ctx := context.Background()
	c, err := client.New(ts.URL)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if _, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "chat"}); err != nil {
		log.Fatal(err)
	}
	_, err = c.AppendMessages(ctx, "chat", []api.OpenAIMessage{
		{Role: "system", Content: "You are terse."},
		{Role: "user", Content: "What is 6 times 7?"},
		{Role: "assistant", Content: "42"},
	}, client.AppendOptions{IdempotencyKey: "turn-1"})
	if err != nil {
		log.Fatal(err)
	}
	cx, err := c.Context(ctx, "chat", client.ContextOptions{Budget: 8000, Format: "openai"})
	if err != nil {
		log.Fatal(err)
	}
	msgs, err := client.OpenAIMessages(cx)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		fmt.Println(m.Role, m.Content)
	}
	fmt.Println("steps shown:", cx.Steps, "dropped:", cx.DroppedSteps)
	// Output:
	// system You are terse.
	// user What is 6 times 7?
	// assistant 42
	// steps shown: [1 2 3] dropped: 0
}

// A memory block of a user, which every context of the user's sessions
// shows after the system prompt, edited as an agent's tools would.
func ExampleClient_AppendBlock() {
	ts := startServer()
	defer ts.Close()
	ctx := context.Background()
	c, err := client.New(ts.URL)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ann := client.UserBlocks("ann")
	value := "Name: Ann."
	if _, err := c.PutBlock(ctx, ann, "human", api.PutBlockRequest{Value: &value, Limit: 500}, client.BlockWrite{}); err != nil {
		log.Fatal(err)
	}
	b, err := c.AppendBlock(ctx, ann, "human", api.AppendBlockRequest{Text: "Prefers trains to planes.", By: "travel-agent"}, client.BlockWrite{IfVersion: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("version %d, %d of %d characters:\n%s\n", b.Version, b.Chars, b.Limit, b.Value)
	// Output:
	// version 2, 36 of 500 characters:
	// Name: Ann.
	// Prefers trains to planes.
}
