package sessions

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

// blocksService returns a service with memory blocks, and session s of
// user ann with a system prompt and turns of about 60 tokens each.
func blocksService(t *testing.T, turns int) (*Service, *blocks.Memory) {
	t.Helper()
	ctx := context.Background()
	bm := blocks.New(blocks.NewMemStore(), blocks.Options{})
	svc, err := New(Config{Store: memstore.New(memstore.Options{}), Blocks: bm})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(ctx, store.CreateRequest{ID: "s", UserID: "ann"}); err != nil {
		t.Fatal(err)
	}
	msgs := []agentmem.Message{{Role: agentmem.RoleSystem, Content: agentmem.Text("You are a travel agent.")}}
	for i := range turns {
		msgs = append(msgs,
			agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(fmt.Sprintf("Question %d: %s", i, strings.Repeat("where should I go next? ", 5)))},
			agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text(fmt.Sprintf("Answer %d: %s", i, strings.Repeat("somewhere warm and quiet. ", 5)))})
	}
	if _, err := svc.AppendMessages(ctx, MessagesRequest{SessionID: "s", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	return svc, bm
}

func setBlock(t *testing.T, bm *blocks.Memory, owner blocks.Owner, label, value string) {
	t.Helper()
	if _, err := bm.Set(context.Background(), blocks.SetRequest{Key: blocks.Key{Owner: owner, Label: label}, Value: value}); err != nil {
		t.Fatal(err)
	}
}

// TestContextShowsBlocks: a context shows the user's blocks and the
// session's right after the system prompt, a session's block hiding its
// user's of the same label; they count in the budget, and the steps
// make room for them; an edit shows in the next context.
func TestContextShowsBlocks(t *testing.T) {
	ctx := context.Background()
	svc, bm := blocksService(t, 30)
	plain, err := svc.Context(ctx, ContextRequest{SessionID: "s", Budget: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Blocks) != 0 || plain.Messages[0].Text() != "You are a travel agent." {
		t.Fatalf("without blocks: %v %q", plain.Blocks, plain.Messages[0].Text())
	}
	setBlock(t, bm, blocks.User("ann"), "human", "Name: Ann. Prefers trains.")
	setBlock(t, bm, blocks.User("ann"), "task", "the user's task, hidden by the session's")
	setBlock(t, bm, blocks.Session("s"), "task", strings.Repeat("Plan a spring trip by train. ", 10))
	setBlock(t, bm, blocks.User("bob"), "human", "Name: Bob.")
	c, err := svc.Context(ctx, ContextRequest{SessionID: "s", Budget: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, b := range c.Blocks {
		labels = append(labels, string(b.Owner.Kind)+":"+b.Label)
	}
	if !slices.Equal(labels, []string{"user:human", "session:task"}) {
		t.Fatalf("blocks shown: %v", labels)
	}
	want := "You are a travel agent.\n\n" + blocks.Render(c.Blocks)
	if got := c.Messages[0].Text(); got != want {
		t.Fatalf("system prompt:\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(want, "<human chars=\"26/5000\">\nName: Ann. Prefers trains.\n</human>") {
		t.Fatalf("rendered:\n%s", want)
	}
	if n := agentmem.RequestTokens(svc.Counter(), c.Messages); c.Tokens != n || c.Tokens > 1000 {
		t.Fatalf("tokens %d, counted %d, budget 1000", c.Tokens, n)
	}
	if len(c.Steps) >= len(plain.Steps) {
		t.Fatalf("%d steps with the blocks, %d without: the blocks took no room", len(c.Steps), len(plain.Steps))
	}
	if plain.Context.Tokens != agentmem.RequestTokens(svc.Counter(), plain.Messages) {
		t.Fatalf("plain tokens %d", plain.Context.Tokens)
	}

	if _, err := bm.Append(ctx, blocks.Key{Owner: blocks.User("ann"), Label: "human"}, "Lives in Lyon.", blocks.Edit{}); err != nil {
		t.Fatal(err)
	}
	c, err = svc.Context(ctx, ContextRequest{SessionID: "s", Budget: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.Messages[0].Text(), "Prefers trains.\nLives in Lyon.\n</human>") {
		t.Fatalf("the edit is not shown: %q", c.Messages[0].Text())
	}
}

// TestContextBlocksBudgetTooSmall: when the pinned steps fit the budget
// but not with the blocks, the context is the budget error, and its
// Required counts the blocks.
func TestContextBlocksBudgetTooSmall(t *testing.T) {
	ctx := context.Background()
	svc, bm := blocksService(t, 1)
	// The pinned system prompt and first question, and the answer.
	c, err := svc.Context(ctx, ContextRequest{SessionID: "s", Budget: 120})
	if err != nil {
		t.Fatal(err)
	}
	setBlock(t, bm, blocks.Session("s"), "notes", strings.Repeat("a long note ", 30))
	_, err = svc.Context(ctx, ContextRequest{SessionID: "s", Budget: 120})
	var be *agentmem.BudgetError
	if !errors.As(err, &be) || be.Budget != 120 || be.Required <= 120 {
		t.Fatalf("pinned steps (%d tokens) and a block of about 90 in 120: %v", c.Tokens, err)
	}
	if _, err := svc.Context(ctx, ContextRequest{SessionID: "s", Budget: 400}); err != nil {
		t.Fatalf("with room for the block: %v", err)
	}
}

// TestContextBlocksWithoutSystemPrompt: a session without a system prompt
// gets the blocks as a system message of their own, first.
func TestContextBlocksWithoutSystemPrompt(t *testing.T) {
	ctx := context.Background()
	bm := blocks.New(blocks.NewMemStore(), blocks.Options{})
	svc, err := New(Config{Store: memstore.New(memstore.Options{}), Blocks: bm})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AppendMessages(ctx, MessagesRequest{SessionID: "s", Messages: []agentmem.Message{{Role: agentmem.RoleUser, Content: agentmem.Text("hi")}}}); err != nil {
		t.Fatal(err)
	}
	setBlock(t, bm, blocks.Session("s"), "persona", "Cheerful.")
	c, err := svc.Context(ctx, ContextRequest{SessionID: "s", Format: "anthropic"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Messages) != 2 || c.Messages[0].Role != agentmem.RoleSystem || c.Messages[0].Text() != blocks.Render(c.Blocks) || c.Messages[1].Text() != "hi" {
		t.Fatalf("messages: %+v", c.Messages)
	}
	if c.Tokens != agentmem.RequestTokens(svc.Counter(), c.Messages) {
		t.Fatalf("tokens %d", c.Tokens)
	}
}

// TestDeleteDeletesSessionBlocks: deleting a session deletes its blocks,
// not its user's.
func TestDeleteDeletesSessionBlocks(t *testing.T) {
	ctx := context.Background()
	svc, bm := blocksService(t, 1)
	setBlock(t, bm, blocks.Session("s"), "task", "plan")
	setBlock(t, bm, blocks.User("ann"), "human", "Ann")
	if err := svc.Delete(ctx, "", "s"); err != nil {
		t.Fatal(err)
	}
	if bs, err := bm.List(ctx, "", blocks.Session("s")); err != nil || len(bs) != 0 {
		t.Fatalf("the session's blocks: %+v %v", bs, err)
	}
	if bs, err := bm.List(ctx, "", blocks.User("ann")); err != nil || len(bs) != 1 {
		t.Fatalf("the user's blocks: %+v %v", bs, err)
	}
}

// TestContextReuse: a context fitted into the storage of an earlier one
// (ContextRequest.Reuse) is the context fitted afresh, with blocks shown
// (whose fit may take several tries) or not, in every budget, and its
// embedded Context is the one reused.
func TestContextReuse(t *testing.T) {
	ctx := context.Background()
	svc, bm := blocksService(t, 30)
	reuse := new(agentmem.Context)
	for _, withBlocks := range []bool{false, true} {
		if withBlocks {
			setBlock(t, bm, blocks.Session("s"), "task", strings.Repeat("Plan a spring trip by train. ", 10))
		}
		for _, budget := range []int{1000, 300, 0, 2000} {
			fresh, err := svc.Context(ctx, ContextRequest{SessionID: "s", Budget: budget})
			if err != nil {
				t.Fatal(err)
			}
			got, err := svc.Context(ctx, ContextRequest{SessionID: "s", Budget: budget, Reuse: reuse})
			if err != nil {
				t.Fatal(err)
			}
			if got.Context != reuse {
				t.Errorf("blocks %v, budget %d: the Context is not the one reused", withBlocks, budget)
			}
			if !reflect.DeepEqual(got.Messages, fresh.Messages) || got.Tokens != fresh.Tokens || !slices.Equal(got.Steps, fresh.Steps) {
				t.Errorf("blocks %v, budget %d: reused %d messages, %d tokens, steps %v; fresh %d, %d, %v", withBlocks, budget,
					len(got.Messages), got.Tokens, got.Steps, len(fresh.Messages), fresh.Tokens, fresh.Steps)
			}
		}
	}
}
