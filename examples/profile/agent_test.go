package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
)

// TestProfileOffline runs the three sessions against the scripted model,
// which knows of the user only what each request sends: the block ends
// up with the name and the preference, written by the agent's tools, and
// the third session, whose conversation says neither, answers from the
// block its context shows.
func TestProfileOffline(t *testing.T) {
	t.Setenv("AGENTMEM_LLM_BASE_URL", "")
	var out strings.Builder
	res, err := run(context.Background(), Config{Out: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "built-in scripted model") {
		t.Fatal("the offline run did not say it used the scripted model")
	}
	const want = "Name: Ann.\nPrefers trains to planes."
	if res.Block.Value != want || res.Block.Version != 3 || res.Block.UpdatedBy != "profile-agent" {
		t.Fatalf("the block at the end: %+v, want %q at version 3 by the agent\n%s", res.Block, want, out.String())
	}
	var changes []string
	for _, c := range res.History {
		changes = append(changes, string(c.Action)+" by "+c.By)
	}
	if w := []string{"created by app", "appended by profile-agent", "set by profile-agent"}; !slices.Equal(changes, w) {
		t.Errorf("the block's history: %q, want %q", changes, w)
	}

	// The third session's context shows the block after its system
	// prompt, and nothing else of the first two sessions.
	last := res.Last
	if len(last.Blocks) != 1 || last.Blocks[0].Label != Label || last.Blocks[0].Value != want {
		t.Fatalf("the third session's context shows the blocks %+v", last.Blocks)
	}
	sys := last.Messages[0]
	if sys.Role != agentmem.RoleSystem || !strings.HasSuffix(sys.Text(), "\n\n"+blocks.Render(last.Blocks)) || !strings.Contains(sys.Text(), "<human chars=\"36/500\">\n"+want+"\n</human>") {
		t.Errorf("the third session's system prompt:\n%s", sys.Text())
	}
	for _, m := range last.Messages[1:] {
		if strings.Contains(m.Text(), "Ann") || strings.Contains(m.Text(), "train") {
			t.Errorf("the third session's conversation says %q: the answer need not come from the block", m.Text())
		}
	}
	if got := res.Answers[2]; got != "You are Ann, and you prefer trains to planes: take the train to Lisbon." {
		t.Errorf("the third session's answer: %q\n%s", got, out.String())
	}
}

// TestProfileNeedsTheBlock: asked the third question without the first
// two sessions, the same scripted model does not know the user, since
// nothing else carries what it learnt.
func TestProfileNeedsTheBlock(t *testing.T) {
	t.Setenv("AGENTMEM_LLM_BASE_URL", "")
	res, err := run(context.Background(), Config{Messages: defaultMessages[2:]})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answers[0] != "I don't know your name yet: you haven't told me." || res.Block.Value != "" {
		t.Errorf("without the first sessions: answer %q, block %q", res.Answers[0], res.Block.Value)
	}
}
