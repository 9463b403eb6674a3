package compose

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/summarize"
	"github.com/agentmem/agentmem/tokenizer"
)

func TestFitKeepsAPrefixWithinBudget(t *testing.T) {
	c, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf("line %d says something about item %d", i, i*i))
	}
	prev := 0
	for budget := 0; budget < 400; budget += 3 {
		b := Fit(c, "Header:", lines, budget)
		if b.Tokens > budget || b.Kept < prev {
			t.Fatalf("budget %d: %d tokens, %d kept (before %d)", budget, b.Tokens, b.Kept, prev)
		}
		if !b.Empty() && b.Tokens != agentmem.MessageTokens(c, b.Message) {
			t.Fatalf("budget %d: reported %d, costs %d", budget, b.Tokens, agentmem.MessageTokens(c, b.Message))
		}
		if b.Kept < len(lines) && b.Kept > 0 && Fit(c, "Header:", lines[:b.Kept+1], budget).Kept != b.Kept {
			t.Fatalf("budget %d: one more line fits", budget)
		}
		prev = b.Kept
	}
}

func TestInsertAfterLeadingSystemMessages(t *testing.T) {
	msgs := []agentmem.Message{{Role: agentmem.RoleSystem}, {Role: agentmem.RoleUser}, {Role: agentmem.RoleSystem}}
	b := Block{Message: agentmem.Message{Role: agentmem.RoleSystem, Name: "block"}, Kept: 1}
	got := Insert(msgs, b, Block{})
	var names []string
	for _, m := range got {
		names = append(names, string(m.Role)+m.Name)
	}
	if want := []string{"system", "systemblock", "user", "system"}; !slices.Equal(names, want) {
		t.Fatalf("got %v, want %v", names, want)
	}
}

func TestSummarizeCoversEveryUnpinnedStep(t *testing.T) {
	steps := []agentmem.Step{
		&agentmem.SystemPromptStep{StepInfo: agentmem.StepInfo{Number: 1, ID: "a"}, Content: "sys"},
		&agentmem.TaskStep{StepInfo: agentmem.StepInfo{Number: 2, ID: "b"}, Task: "book a flight to Oslo"},
		&agentmem.ScratchpadStep{StepInfo: agentmem.StepInfo{Number: 3, ID: "c"}, Content: "found a fare of 120 EUR"},
	}
	c := tokenizer.NewHeuristic()
	text, covers, err := Summarize(context.Background(), summarize.Extractive{Counter: c}, c, steps, 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := []agentmem.Range{{From: 2, To: 3}}; !slices.Equal(covers, want) {
		t.Fatalf("covers = %v, want %v (the task too, not the system prompt)", covers, want)
	}
	if text == "" || c.Count(text) > 100 {
		t.Fatalf("summary %q", text)
	}
	if text, covers, err := Summarize(context.Background(), summarize.Extractive{}, c, steps[:1], 100); text != "" || covers != nil || err != nil {
		t.Fatalf("only a system prompt: %q %v %v", text, covers, err)
	}
}
