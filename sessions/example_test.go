package sessions_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

// A service over a store: messages appended as an agent framework saves
// them, one at a time (a tool call before its result), and the context
// the next model call gets, fitted to a budget.
func Example() {
	ctx := context.Background()
	svc, err := sessions.New(sessions.Config{Store: memstore.New(memstore.Options{})})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := svc.Create(ctx, store.CreateRequest{Tenant: "acme", ID: "chat-1"}); err != nil {
		log.Fatal(err)
	}
	add := func(m agentmem.Message) {
		if _, err := svc.AppendMessages(ctx, sessions.MessagesRequest{Tenant: "acme", SessionID: "chat-1", Messages: []agentmem.Message{m}}); err != nil {
			log.Fatal(err)
		}
	}
	add(agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("What is the weather in Porto?")})
	add(agentmem.Message{Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{{ID: "c1", Name: "weather", Arguments: `{"city":"Porto"}`}}})

	c, err := svc.Context(ctx, sessions.ContextRequest{Tenant: "acme", SessionID: "chat-1", Budget: 1000})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("messages:", len(c.Messages), "pending calls:", len(c.Pending))

	add(agentmem.Message{Role: agentmem.RoleTool, ToolCallID: "c1", Content: agentmem.Text("18°C, sunny")})
	c, err = svc.Context(ctx, sessions.ContextRequest{Tenant: "acme", SessionID: "chat-1", Budget: 1000})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range c.Messages {
		fmt.Printf("%s %q calls=%d\n", m.Role, m.Text(), len(m.ToolCalls))
	}
	// Output:
	// messages: 1 pending calls: 1
	// user "What is the weather in Porto?" calls=0
	// assistant "" calls=1
	// tool "18°C, sunny" calls=0
}
