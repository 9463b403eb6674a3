package shared

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/tokenizer"
)

// memoryTexts is what an agent's memory holds, as message texts.
func memoryTexts(m *agentmem.Memory) []string {
	var out []string
	for _, s := range m.Steps() {
		for _, msg := range s.Messages(agentmem.RenderOptions{}) {
			out = append(out, string(msg.Role)+": "+msg.Text())
		}
	}
	return out
}

func TestBroadcastMessageDeliversIntoEachMemory(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Create(ctx, store.CreateRequest{ID: "run"}); err != nil {
		t.Fatal(err)
	}
	memOpts := agentmem.Options{Counter: tokenizer.NewHeuristic()}
	agents, err := store.OpenAgents(ctx, st, "", "run", memOpts)
	if err != nil {
		t.Fatal(err)
	}
	p := open(t, Options{Store: st, Agents: agents})
	for _, a := range []string{"alice", "bob", "carol"} {
		join(t, p, a)
	}
	sub, err := p.Subscribe("bob")
	if err != nil {
		t.Fatal(err)
	}
	msg := agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("deploys are frozen until Friday")}
	e, err := p.BroadcastMessage(ctx, "alice", msg)
	if err != nil {
		t.Fatal(err)
	}
	if got := <-sub.C(); got.ID != e.ID || got.Text != "deploys are frozen until Friday" {
		t.Fatalf("bob was told %+v, want entry %s", got, e.ID)
	}
	// Delivered into every member's own memory, durably: a new process
	// opening the run finds it in each.
	again, err := store.OpenAgents(ctx, st, "", "run", memOpts)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"alice", "bob", "carol"} {
		b, err := again.Memory(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if got := memoryTexts(b.Memory); !slices.Equal(got, []string{"user: deploys are frozen until Friday"}) {
			t.Fatalf("%s's memory holds %q", a, got)
		}
		if id := b.Steps()[0].Info().ID; id != e.ID+"."+a {
			t.Fatalf("%s's copy has ID %q, want %q", a, id, e.ID+"."+a)
		}
	}
	if names, _ := again.List(ctx); !slices.Equal(names, []string{"alice", "bob", "carol"}) {
		t.Fatalf("agent memories %v", names)
	}
	// A member who joins later gets later broadcasts only.
	join(t, p, "dave")
	if _, err := p.BroadcastMessage(ctx, "bob", agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text("use the staging cluster")}); err != nil {
		t.Fatal(err)
	}
	d, _ := agents.Memory(ctx, "dave")
	if got := memoryTexts(d.Memory); !slices.Equal(got, []string{"system: use the staging cluster"}) {
		t.Fatalf("dave's memory holds %q", got)
	}
}

func TestBroadcastMessageRefusals(t *testing.T) {
	ctx := context.Background()
	bare := open(t, Options{})
	join(t, bare, "alice")
	_, err := bare.BroadcastMessage(ctx, "alice", agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("x")})
	if !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("broadcast without Options.Agents: %v, want ErrInvalid", err)
	}

	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Create(ctx, store.CreateRequest{ID: "run"}); err != nil {
		t.Fatal(err)
	}
	agents, err := store.OpenAgents(ctx, st, "", "run", agentmem.Options{Counter: tokenizer.NewHeuristic()})
	if err != nil {
		t.Fatal(err)
	}
	p := open(t, Options{Store: st, Agents: agents})
	join(t, p, "alice")
	for name, m := range map[string]agentmem.Message{
		"tool message": {Role: agentmem.RoleTool, ToolCallID: "c1", Content: agentmem.Text("42")},
		"tool calls":   {Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}},
		"bad UTF-8":    {Role: agentmem.RoleUser, Content: agentmem.Text("\xff")},
	} {
		if _, err := p.BroadcastMessage(ctx, "alice", m); !errors.Is(err, agentmem.ErrInvalid) {
			t.Fatalf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := p.BroadcastMessage(ctx, "mallory", agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("x")}); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("broadcast by a non-member: %v, want ErrNotFound", err)
	}
	if es, _ := p.Entries("alice", 0); len(es) != 0 {
		t.Fatalf("refused broadcasts left entries %v", texts(es))
	}
	if names, _ := agents.List(ctx); len(names) != 0 {
		t.Fatalf("refused broadcasts created memories for %v", names)
	}
}
