package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/server"
)

// withBlocks gives the server memory blocks, as `agentmem serve` does.
func withBlocks(c *server.Config) {
	c.Blocks = blocks.New(blocks.NewMemStore(), blocks.Options{Clock: fixedClock})
}

func ptr[T any](v T) *T { return &v }

// TestBlocks: every blocks route through the client, for a user and a
// session: put, get, list, append, replace, a conditional write that
// loses, history, delete, and the errors of the contract.
func TestBlocks(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil, withBlocks)
	if _, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "s1", UserID: "ann"}); err != nil {
		t.Fatal(err)
	}
	for _, owner := range []client.BlockOwner{client.UserBlocks("ann"), client.SessionBlocks("s1")} {
		b, err := c.PutBlock(ctx, owner, "human", api.PutBlockRequest{Value: ptr("Name: Ann."), Limit: 100, Description: ptr("what we know of the user")}, client.BlockWrite{})
		if err != nil || b.Version != 1 || b.Value != "Name: Ann." || b.Limit != 100 {
			t.Fatalf("put: %+v %v", b, err)
		}
		if b, err = c.AppendBlock(ctx, owner, "human", api.AppendBlockRequest{Text: "Likes trains.", By: "agent"}, client.BlockWrite{IfVersion: 1}); err != nil || b.Value != "Name: Ann.\nLikes trains." || b.Version != 2 {
			t.Fatalf("append: %+v %v", b, err)
		}
		if _, err := c.AppendBlock(ctx, owner, "human", api.AppendBlockRequest{Text: "x"}, client.BlockWrite{IfVersion: 1}); !errors.Is(err, client.ErrConflict) {
			t.Fatalf("append at a stale version: %v, want ErrConflict", err)
		}
		if b, err = c.ReplaceBlock(ctx, owner, "human", api.ReplaceBlockRequest{Old: "trains", New: "planes"}, client.BlockWrite{}); err != nil || b.Value != "Name: Ann.\nLikes planes." {
			t.Fatalf("replace: %+v %v", b, err)
		}
		if _, err := c.ReplaceBlock(ctx, owner, "human", api.ReplaceBlockRequest{Old: "boats", New: "x"}, client.BlockWrite{}); err == nil {
			t.Fatal("a replace of text the block lacks succeeded")
		}
		if _, err := c.AppendBlock(ctx, owner, "human", api.AppendBlockRequest{Text: string(make([]byte, 200))}, client.BlockWrite{}); !errors.Is(err, client.ErrInvalid) {
			t.Fatalf("an append past the limit: %v, want ErrInvalid", err)
		}
		got, err := c.Block(ctx, owner, "human")
		if err != nil || got.Version != 3 {
			t.Fatalf("get: %+v %v", got, err)
		}
		list, err := c.Blocks(ctx, owner)
		if err != nil || len(list) != 1 || list[0].Label != "human" {
			t.Fatalf("list: %+v %v", list, err)
		}
		hist, err := c.BlockHistory(ctx, owner, "human")
		if err != nil || len(hist) != 3 || hist[1].By != "agent" || hist[2].After != "Name: Ann.\nLikes planes." {
			t.Fatalf("history: %+v %v", hist, err)
		}
		if err := c.DeleteBlock(ctx, owner, "human", client.BlockWrite{IfVersion: 3}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Block(ctx, owner, "human"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("get after delete: %v, want ErrNotFound", err)
		}
	}
	if _, err := c.PutBlock(ctx, client.UserBlocks("ann"), "human", api.PutBlockRequest{}, client.BlockWrite{}); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("a put without a value: %v, want ErrInvalid", err)
	}
	if _, err := c.Blocks(ctx, client.BlockOwner{}); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("the zero owner: %v, want ErrInvalid", err)
	}
}

// TestFactsInTime: a fact updated in place, its history, a list as of a
// time and by metadata, and forgetting the user, through the client.
func TestFactsInTime(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil, withLongTerm, withBlocks)
	lisbon, err := c.Remember(ctx, "ann", api.RememberRequest{Text: "Lives in Lisbon.", Metadata: map[string]string{"topic": "home"},
		ValidFrom: testNow.Add(-48 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Remember(ctx, "ann", api.RememberRequest{Text: "Drinks tea.", Metadata: map[string]string{"topic": "food"}}); err != nil {
		t.Fatal(err)
	}
	id := lisbon.Fact.ID
	upd, err := c.UpdateFact(ctx, "ann", id, api.FactPatch{ValidTo: ptr(testNow.Add(-24 * time.Hour)), Reason: "moved"})
	if err != nil || upd.ValidTo.IsZero() {
		t.Fatalf("update: %+v %v", upd, err)
	}
	hist, err := c.FactHistory(ctx, "ann", id)
	if err != nil || len(hist) != 2 || hist[1].Action != "updated" || hist[1].Reason != "moved" {
		t.Fatalf("history: %+v %v", hist, err)
	}
	then, err := c.SearchFacts(ctx, "ann", client.FactsQuery{AsOf: testNow.Add(-36 * time.Hour)})
	if err != nil || len(then) != 1 || then[0].ID != id {
		t.Fatalf("as of 36 hours ago: %+v %v", then, err)
	}
	food, err := c.SearchFacts(ctx, "ann", client.FactsQuery{Filter: map[string]string{"topic": "food"}})
	if err != nil || len(food) != 1 || food[0].Text != "Drinks tea." {
		t.Fatalf("filter topic:food: %+v %v", food, err)
	}
	if _, err := c.PutBlock(ctx, client.UserBlocks("ann"), "human", api.PutBlockRequest{Value: ptr("Ann")}, client.BlockWrite{}); err != nil {
		t.Fatal(err)
	}
	out, err := c.ForgetUser(ctx, "ann", "asked to be forgotten")
	if err != nil || out.Facts != 2 || out.Blocks != 1 {
		t.Fatalf("forget user: %+v %v", out, err)
	}
	if again, err := c.ForgetUser(ctx, "ann", ""); err != nil || *again != (api.ForgetUserResponse{}) {
		t.Fatalf("forget again: %+v %v", again, err)
	}
	if left, err := c.SearchFacts(ctx, "ann", client.FactsQuery{}); err != nil || len(left) != 0 {
		t.Fatalf("facts after forgetting: %+v %v", left, err)
	}
}
