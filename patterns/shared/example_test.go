package shared_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/patterns/shared"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

// Agents join a pool, share what they learn in a scope, and each sees the
// entries its scope allows, with their provenance, next to its own memory.
func Example() {
	ctx := context.Background()
	pool, err := shared.Open(ctx, shared.Options{Name: "incident-42"})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	_ = pool.Join("researcher", "backend")
	_ = pool.Join("coder", "backend")
	_ = pool.Join("writer")

	news, _ := pool.Subscribe("coder")
	defer news.Cancel()

	_, _ = pool.RegisterFact(ctx, "researcher", "The outage began at 09:12 UTC.", shared.Global(),
		shared.Provenance{SessionID: "research-run", Step: 7, Source: "status page"})
	_, _ = pool.Share(ctx, "researcher", "The retry loop in payments/client.go has no backoff.", shared.Team("backend"),
		shared.Provenance{Source: "code search"})
	_, _ = pool.Share(ctx, "researcher", "Hunch: it is DNS.", shared.Private(), shared.Provenance{})

	for range 2 {
		e := <-news.C()
		fmt.Printf("coder is told: [%s, %s by %s] %s\n", e.Kind, e.Scope, e.Provenance.Agent, e.Text)
	}
	writer, _ := pool.Entries("writer", 0)
	fmt.Println("writer reads", len(writer), "entry")

	own := agentmem.New(agentmem.Options{})
	_, _ = own.Add(ctx, &agentmem.SystemPromptStep{Content: "You fix bugs."})
	_, _ = own.Add(ctx, &agentmem.TaskStep{Task: "Stop the payment retries from hammering the API."})
	c, err := pool.Context(ctx, "coder", "payment retry backoff", own, 2000)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range c.Messages {
		fmt.Printf("%s: %s\n", m.Role, m.Text())
	}
	// Output:
	// coder is told: [fact, global by researcher] The outage began at 09:12 UTC.
	// coder is told: [insight, team:backend by researcher] The retry loop in payments/client.go has no backoff.
	// writer reads 1 entry
	// system: You fix bugs.
	// system: Shared memory (from other agents; cite the author when you use it):
	// - [insight from researcher, team:backend] The retry loop in payments/client.go has no backoff.
	// user: Stop the payment retries from hammering the API.
}

// BroadcastMessage delivers a message into the own memory of every member
// (the seeds' broadcast_message): the memories of a run's agents.
func ExamplePool_BroadcastMessage() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	if _, err := st.Create(ctx, store.CreateRequest{ID: "run-1"}); err != nil {
		log.Fatal(err)
	}
	agents, err := store.OpenAgents(ctx, st, "", "run-1", agentmem.Options{})
	if err != nil {
		log.Fatal(err)
	}
	pool, err := shared.Open(ctx, shared.Options{Store: st, Agents: agents})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	_ = pool.Join("planner")
	_ = pool.Join("coder")

	msg := agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("The deploy window moved to Friday.")}
	if _, err := pool.BroadcastMessage(ctx, "planner", msg); err != nil {
		log.Fatal(err)
	}
	coder, _ := agents.Memory(ctx, "coder")
	for _, m := range coder.Messages(agentmem.RenderOptions{}) {
		fmt.Printf("coder's memory: %s: %s\n", m.Role, m.Text())
	}
	// Output: coder's memory: user: The deploy window moved to Friday.
}
