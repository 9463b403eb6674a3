package blocks_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
)

// TestToolbox: the tools edit the session's block of a label, or else the
// user's; they refuse read-only blocks, edits past the limit, a replace
// whose old text does not occur once, missing blocks (naming those there
// are) and bad arguments, each with an error the model can read.
func TestToolbox(t *testing.T) {
	ctx := context.Background()
	m := blocks.New(blocks.NewMemStore(), blocks.Options{})
	set := func(o blocks.Owner, label, value string, limit int, readOnly bool) {
		t.Helper()
		if _, err := m.Set(ctx, blocks.SetRequest{Key: blocks.Key{Owner: o, Label: label}, Value: value, Limit: limit, ReadOnly: &readOnly}); err != nil {
			t.Fatal(err)
		}
	}
	set(blocks.User("ann"), "human", "Name: Ann.", 40, false)
	set(blocks.User("ann"), "task", "the user's", 0, false)
	set(blocks.Session("s"), "task", "Plan a trip.", 0, false)
	set(blocks.User("ann"), "persona", "Be kind.", 0, true)
	tb := &blocks.Toolbox{Memory: m, SessionID: "s", UserID: "ann", By: "travel-agent"}

	for _, tool := range tb.Tools() {
		var schema struct {
			Required             []string `json:"required"`
			AdditionalProperties bool     `json:"additionalProperties"`
		}
		if err := json.Unmarshal(tool.Parameters, &schema); err != nil || len(schema.Required) < 2 || schema.AdditionalProperties || !tb.Handles(tool.Name) {
			t.Errorf("%s: schema %s (%v)", tool.Name, tool.Parameters, err)
		}
	}
	out, err := tb.Call(ctx, blocks.ToolAppend, `{"label":"human","text":"Likes trains."}`)
	if err != nil || !strings.Contains(out, `"human" (version 2, 24 of 40 characters)`) {
		t.Fatalf("append: %q %v", out, err)
	}
	if _, err := tb.Call(ctx, blocks.ToolReplace, `{"label":"task","old":"a trip","new":"a train trip"}`); err != nil {
		t.Fatal(err)
	}
	if b, _ := m.Get(ctx, blocks.Key{Owner: blocks.Session("s"), Label: "task"}); b.Value != "Plan a train trip." || b.UpdatedBy != "travel-agent" {
		t.Fatalf("the session's block: %+v", b)
	}
	if b, _ := m.Get(ctx, blocks.Key{Owner: blocks.User("ann"), Label: "task"}); b.Value != "the user's" {
		t.Fatalf("the user's block of the label changed: %+v", b)
	}
	if _, err := tb.Call(ctx, blocks.ToolRethink, `{"label":"human","value":"Ann, who likes trains."}`); err != nil {
		t.Fatal(err)
	}
	if b, _ := m.Get(ctx, blocks.Key{Owner: blocks.User("ann"), Label: "human"}); b.Value != "Ann, who likes trains." || b.Version != 3 {
		t.Fatalf("rethink: %+v", b)
	}
	for _, c := range []struct {
		name, args string
		is         error
		says       string
	}{
		{blocks.ToolAppend, `{"label":"persona","text":"x"}`, blocks.ErrReadOnly, "read-only"},
		{blocks.ToolRethink, `{"label":"persona","value":"x"}`, blocks.ErrReadOnly, "read-only"},
		{blocks.ToolAppend, `{"label":"human","text":"` + strings.Repeat("x", 40) + `"}`, blocks.ErrOverLimit, "limit of 40"},
		{blocks.ToolReplace, `{"label":"human","old":"rains","new":"x"}`, nil, ""},
		{blocks.ToolReplace, `{"label":"human","old":"cats","new":"x"}`, blocks.ErrNoMatch, "does not occur"},
		{blocks.ToolAppend, `{"label":"notes","text":"x"}`, agentmem.ErrNotFound, "the blocks are human, persona, task"},
		{blocks.ToolAppend, `{"label":"human"}`, agentmem.ErrInvalid, `"text" is required`},
		{blocks.ToolAppend, `{"label":"human","text":1}`, agentmem.ErrInvalid, "must be a string"},
		{blocks.ToolAppend, `{"label":"human","text":"x","extra":"y"}`, agentmem.ErrInvalid, "not an argument"},
		{"memory_forget", `{}`, blocks.ErrUnknownTool, "memory_append"},
	} {
		_, err := tb.Call(ctx, c.name, c.args)
		if c.is == nil {
			if err != nil {
				t.Errorf("%s %s: %v", c.name, c.args, err)
			}
			continue
		}
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s %s: %v, want %v saying %q", c.name, c.args, err, c.is, c.says)
		}
	}
}

// TestRethinkStartsABlock: memory_rethink of a label no block has starts
// a block of the session; appends and replaces of one are refused.
func TestRethinkStartsABlock(t *testing.T) {
	ctx := context.Background()
	m := blocks.New(blocks.NewMemStore(), blocks.Options{})
	tb := &blocks.Toolbox{Memory: m, SessionID: "s1", UserID: "alice"}
	if _, err := tb.Call(ctx, blocks.ToolAppend, `{"label":"notes","text":"x"}`); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("append to a missing block: %v", err)
	}
	if _, err := tb.Call(ctx, blocks.ToolRethink, `{"label":"notes","value":"the plan"}`); err != nil {
		t.Fatal(err)
	}
	b, err := m.Get(ctx, blocks.Key{Owner: blocks.Session("s1"), Label: "notes"})
	if err != nil || b.Value != "the plan" || b.Version != 1 {
		t.Fatalf("the new block: %+v, %v", b, err)
	}
	if _, err := tb.Call(ctx, blocks.ToolAppend, `{"label":"notes","text":"next"}`); err != nil {
		t.Fatal(err)
	}
}
