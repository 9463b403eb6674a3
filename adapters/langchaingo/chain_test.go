package langchaingo_test

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"

	amlc "github.com/agentmem/agentmem/adapters/langchaingo"
	"github.com/agentmem/agentmem/client"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/fake"
	"github.com/tmc/langchaingo/memory"
)

// recorder is langchaingo's fake LLM (scripted answers, no network) that
// also records the prompts it was given.
type recorder struct {
	*fake.LLM
	mu      sync.Mutex
	prompts []string
}

func newRecorder(answers ...string) *recorder { return &recorder{LLM: fake.NewFakeLLM(answers)} }

func (r *recorder) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	var b strings.Builder
	for _, m := range msgs {
		for _, p := range m.Parts {
			if t, ok := p.(llms.TextContent); ok {
				b.WriteString(t.Text)
			}
		}
	}
	r.mu.Lock()
	r.prompts = append(r.prompts, b.String())
	r.mu.Unlock()
	return r.LLM.GenerateContent(ctx, msgs, opts...)
}

func (r *recorder) prompt(i int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.prompts[i]
}

// TestConversationChain runs langchaingo's conversation chain with a
// ConversationBuffer over the history: each turn's prompt holds the turns
// before it, read from the server, and a chain started later on the same
// session (a restarted process) goes on where the first stopped.
func TestConversationChain(t *testing.T) {
	ctx := context.Background()
	h, srv := newHistory(t, "conversation")
	llm := newRecorder("Hello Ann!", "Your name is Ann.", "You asked my name... no: your name, Ann.")
	chain := chains.NewConversation(llm, memory.NewConversationBuffer(memory.WithChatHistory(h)))
	if out, err := chains.Run(ctx, chain, "Hi, I am Ann."); err != nil || out != "Hello Ann!" {
		t.Fatalf("turn 1: %q, %v", out, err)
	}
	if out, err := chains.Run(ctx, chain, "What is my name?"); err != nil || out != "Your name is Ann." {
		t.Fatalf("turn 2: %q, %v", out, err)
	}
	if p := llm.prompt(1); !strings.Contains(p, "Human: Hi, I am Ann.\nAI: Hello Ann!\nHuman: What is my name?") {
		t.Errorf("turn 2's prompt lacks turn 1:\n%s", p)
	}

	// Another process: a new client, history and chain on the session.
	c2, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	h2, err := amlc.NewChatMessageHistory(c2, "conversation")
	if err != nil {
		t.Fatal(err)
	}
	chain2 := chains.NewConversation(llm, memory.NewConversationBuffer(memory.WithChatHistory(h2)))
	if _, err := chains.Run(ctx, chain2, "What did I ask?"); err != nil {
		t.Fatal(err)
	}
	want := "Human: Hi, I am Ann.\nAI: Hello Ann!\nHuman: What is my name?\nAI: Your name is Ann.\nHuman: What did I ask?"
	if p := llm.prompt(2); !strings.Contains(p, want) {
		t.Errorf("the restarted chain's prompt lacks the session:\n%s", p)
	}

	// The buffer's messages, as a chat prompt would take them.
	buf := memory.NewConversationBuffer(memory.WithChatHistory(h2), memory.WithReturnMessages(true))
	vars, err := buf.LoadMemoryVariables(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := vars["history"].([]llms.ChatMessage)
	if len(msgs) != 6 || msgs[0] != (llms.HumanChatMessage{Content: "Hi, I am Ann."}) ||
		!reflect.DeepEqual(msgs[5], llms.AIChatMessage{Content: "You asked my name... no: your name, Ann."}) {
		t.Errorf("buffer messages %#v", msgs)
	}
	// The buffer's Clear clears the session's working set.
	if err := buf.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if msgs, err := h.Messages(ctx); err != nil || len(msgs) != 0 {
		t.Errorf("after the buffer's Clear: %#v, %v", msgs, err)
	}
}
