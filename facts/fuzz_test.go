package facts

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
)

// FuzzDecodeDecisions checks the decoder of a model's extraction output:
// it never panics, refuses with an *agentmem.InvalidError, and what it
// accepts is a list of well-formed decisions naming only known facts.
func FuzzDecodeDecisions(f *testing.F) {
	f.Add(`{"decisions":[{"action":"add","text":"Likes jazz.","confidence":0.4}]}`)
	f.Add(`{"decisions":[{"action":"supersede","id":"f1","text":"Lives in Oslo."},{"action":"reinforce","id":"f2"}]}`)
	f.Add("```json\n{\"decisions\":[{\"action\":\"ignore\"}]}\n```")
	f.Add(`{"decisions":[{"action":"reinforce","id":"f9"}]}`)
	f.Add(`{"decisions":[{"action":"add","text":""}]} x`)
	ids := map[string]string{"f1": "real-1", "f2": "real-2"}
	f.Fuzz(func(t *testing.T, out string) {
		ds, err := decodeDecisions(out, ids, 8)
		if err != nil {
			var ie *agentmem.InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if len(ds) > 8 {
			t.Fatalf("%d decisions, limit 8", len(ds))
		}
		for _, d := range ds {
			if err := d.validate("", Source{}, nil); err != nil {
				t.Fatalf("accepted an invalid decision %+v: %v", d, err)
			}
			switch d.Op {
			case OpAdd:
				if d.FactID != "" || strings.TrimSpace(d.Text) == "" {
					t.Fatalf("bad add %+v", d)
				}
			case OpReinforce, OpSupersede:
				if d.FactID != "real-1" && d.FactID != "real-2" {
					t.Fatalf("decision names an unknown fact: %+v", d)
				}
			default:
				t.Fatalf("decision %+v should have been dropped or refused", d)
			}
			if !utf8.ValidString(d.Text) {
				t.Fatalf("invalid UTF-8 text %q", d.Text)
			}
		}
	})
}

// FuzzToolCall checks the tools' argument decoder and dispatcher: any name
// and arguments give a result or a typed error, never a panic, and a
// failed call writes nothing.
func FuzzToolCall(f *testing.F) {
	f.Add(ToolRemember, `{"text":"Prefers tea."}`)
	f.Add(ToolRecall, `{"query":"tea"}`)
	f.Add(ToolForget, `{"id":"x","reason":"asked"}`)
	f.Add(ToolRemember, `{"text":1}`)
	f.Add(ToolRecall, `{"query":"tea","k":3}`)
	f.Add("remember ", ``)
	f.Fuzz(func(t *testing.T, name, arguments string) {
		ctx := context.Background()
		mem := New(NewMemStore(), Options{Clock: func() time.Time { return t0 }})
		tb := &Toolbox{Memory: mem, UserID: "u"}
		if _, err := tb.Call(ctx, ToolRemember, `{"text":"Drinks tea."}`); err != nil {
			t.Fatal(err)
		}
		out, err := tb.Call(ctx, name, arguments)
		fs, _ := mem.List(ctx, "", "u", true)
		if err != nil {
			if out != "" {
				t.Fatalf("error %v with output %q", err, out)
			}
			if !errors.Is(err, agentmem.ErrInvalid) && !errors.Is(err, ErrUnknownTool) && !errors.Is(err, agentmem.ErrNotFound) {
				t.Fatalf("untyped error: %v", err)
			}
			if errors.Is(err, ErrUnknownTool) == tb.Handles(name) {
				t.Fatalf("Handles(%q) = %v, error %v", name, tb.Handles(name), err)
			}
			if len(fs) != 1 || fs[0].Reinforcements != 0 {
				t.Fatalf("a failed call changed the facts: %+v", fs)
			}
			return
		}
		if out == "" || !utf8.ValidString(out) {
			t.Fatalf("output %q", out)
		}
	})
}
