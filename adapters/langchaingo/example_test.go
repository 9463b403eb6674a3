package langchaingo_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agentmem/agentmem/adapters/internal/servertest"
	"github.com/agentmem/agentmem/adapters/langchaingo"
	"github.com/agentmem/agentmem/client"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/fake"
	"github.com/tmc/langchaingo/memory"
)

// A conversation chain whose memory is an agentmem session.
func Example() {
	ctx := context.Background()
	// An agentmem server in process, standing in for `agentmem serve`
	// at http://127.0.0.1:8080.
	srv, err := servertest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := client.New(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	history, err := langchaingo.NewChatMessageHistory(c, "support-42")
	if err != nil {
		log.Fatal(err)
	}
	llm := fake.NewFakeLLM([]string{"Hello Ann!", "You are Ann."})
	chain := chains.NewConversation(llm, memory.NewConversationBuffer(memory.WithChatHistory(history)))
	for _, input := range []string{"Hi, I am Ann.", "Who am I?"} {
		if _, err := chains.Run(ctx, chain, input); err != nil {
			log.Fatal(err)
		}
	}

	msgs, err := history.Messages(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		fmt.Printf("%s: %s\n", m.GetType(), m.GetContent())
	}
	// Output:
	// human: Hi, I am Ann.
	// ai: Hello Ann!
	// human: Who am I?
	// ai: You are Ann.
}

// Tool calls and their results are stored in the session as one action.
func ExampleChatMessageHistory_AddMessage() {
	ctx := context.Background()
	srv, err := servertest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	history, err := langchaingo.NewChatMessageHistory(srv.Client, "weather-1")
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range []llms.ChatMessage{
		llms.HumanChatMessage{Content: "Weather in Paris?"},
		llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: "call_1", Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}}}},
		llms.ToolChatMessage{ID: "call_1", Content: "18C, cloudy"},
		llms.AIChatMessage{Content: "18C and cloudy."},
	} {
		if err := history.AddMessage(ctx, m); err != nil {
			log.Fatal(err)
		}
	}
	// What a model is given: the server's context of the session.
	resp, err := srv.Client.Context(ctx, "weather-1", client.ContextOptions{})
	if err != nil {
		log.Fatal(err)
	}
	msgs, err := client.OpenAIMessages(resp)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		fmt.Println(m.Role, m.Content, len(m.ToolCalls))
	}
	// Output:
	// user Weather in Paris? 0
	// assistant <nil> 1
	// tool 18C, cloudy 0
	// assistant 18C and cloudy. 0
}

// A retriever over recall search.
func ExampleNewRetriever() {
	ctx := context.Background()
	srv, err := servertest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	// Documents in its recall index, among them "faq-1".
	if err := servertest.Seed(ctx, srv.Client); err != nil {
		log.Fatal(err)
	}
	r, err := langchaingo.NewRetriever(srv.Client, client.RecallQuery{K: 3})
	if err != nil {
		log.Fatal(err)
	}
	docs, err := r.GetRelevantDocuments(ctx, "how long do refunds take")
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range docs {
		fmt.Println(d.Metadata["id"], d.PageContent)
	}
	// Output:
	// faq-1 Refunds take five business days.
}
