package facts

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
)

func TestToolsSchemas(t *testing.T) {
	tb := &Toolbox{Memory: New(NewMemStore(), Options{}), UserID: "u"}
	var names []string
	for _, tool := range tb.Tools() {
		names = append(names, tool.Name)
		var s struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(tool.Parameters, &s); err != nil {
			t.Fatalf("%s: schema is not JSON: %v\n%s", tool.Name, err, tool.Parameters)
		}
		if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties || len(s.Required) != len(s.Properties) || len(s.Required) == 0 {
			t.Fatalf("%s: not a strict object schema: %s", tool.Name, tool.Parameters)
		}
		if !tb.Handles(tool.Name) || tool.Description == "" {
			t.Fatalf("%s: not handled or undocumented", tool.Name)
		}
	}
	if !slices.Equal(names, []string{ToolRemember, ToolRecall, ToolForget}) || tb.Handles("scratchpad_store") {
		t.Fatalf("tools = %v", names)
	}
}

func TestToolsCall(t *testing.T) {
	ctx := context.Background()
	mem := New(NewMemStore(), Options{})
	alice := &Toolbox{Memory: mem, UserID: "alice", Source: Source{Agent: "helper"}}
	bob := &Toolbox{Memory: mem, UserID: "bob"}
	out, err := alice.Call(ctx, ToolRemember, `{"text":"Prefers short answers."}`)
	if err != nil || !strings.HasPrefix(out, "remembered [") {
		t.Fatalf("remember = %q, %v", out, err)
	}
	if out, err = alice.Call(ctx, ToolRemember, `{"text":"prefers SHORT answers"}`); err != nil || !strings.HasPrefix(out, "already known, reinforced [") {
		t.Fatalf("remember again = %q, %v", out, err)
	}
	fs, _ := mem.List(ctx, "", "alice", false)
	if len(fs) != 1 || fs[0].Source.Agent != "helper" {
		t.Fatalf("facts = %+v", fs)
	}
	id := fs[0].ID
	if out, err = alice.Call(ctx, ToolRecall, `{"query":"answer length"}`); err != nil || !strings.Contains(out, "["+id+"] Prefers short answers. (confidence ") {
		t.Fatalf("recall = %q, %v", out, err)
	}
	if out, err = bob.Call(ctx, ToolRecall, `{"query":"answer"}`); err != nil || out != "nothing remembered about the user matches" {
		t.Fatalf("bob's recall = %q, %v", out, err)
	}
	if _, err = bob.Call(ctx, ToolForget, `{"id":"`+id+`","reason":"spite"}`); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("bob forgetting alice's fact: %v, want ErrNotFound", err)
	}
	if out, err = alice.Call(ctx, ToolForget, `{"id":"`+id+`","reason":"the user asked"}`); err != nil || out != "forgot ["+id+"]" {
		t.Fatalf("forget = %q, %v", out, err)
	}
	audit, _ := mem.Audit(ctx, "", "alice")
	if last := audit[len(audit)-1]; last.Action != ActionForgotten || last.By != "helper" || last.Reason != "the user asked" {
		t.Fatalf("audit = %+v", audit)
	}
}

func TestToolsBadCalls(t *testing.T) {
	ctx := context.Background()
	tb := &Toolbox{Memory: New(NewMemStore(), Options{}), UserID: "u"}
	cases := []struct{ name, args, field string }{
		{ToolRemember, ``, "text"},
		{ToolRemember, `{}`, "text"},
		{ToolRemember, `{"text":1}`, "text"},
		{ToolRemember, `{"text":null}`, "text"},
		{ToolRemember, `{"text":"a","extra":true}`, "extra"},
		{ToolRemember, `["text"]`, ""},
		{ToolRemember, `{"text":"a"} {}`, ""},
		{ToolRemember, `{"text":`, ""},
		{ToolForget, `{"id":"x"}`, "reason"},
		{ToolRecall, `"query"`, ""},
	}
	for _, c := range cases {
		_, err := tb.Call(ctx, c.name, c.args)
		var ae *ArgumentError
		if !errors.As(err, &ae) || !errors.Is(err, agentmem.ErrInvalid) || ae.Tool != c.name || ae.Field != c.field {
			t.Errorf("%s(%s) = %v, want an *ArgumentError for field %q", c.name, c.args, err, c.field)
		}
	}
	if _, err := tb.Call(ctx, ToolRemember, `{"text":"   "}`); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("remember blank: %v", err)
	}
	if _, err := tb.Call(ctx, "scratchpad_store", `{}`); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("unknown tool: %v", err)
	}
	if fs, _ := tb.Memory.List(ctx, "", "u", true); len(fs) != 0 {
		t.Fatalf("bad calls wrote %+v", fs)
	}
}
