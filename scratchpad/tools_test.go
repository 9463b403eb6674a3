package scratchpad

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestToolsSchemas(t *testing.T) {
	p := New(Options{})
	tools := p.Tools()
	wantNames := []string{ToolStore, ToolRecall, ToolDelete, ToolObserve, ToolFail, ToolContext}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
		if len(tool.Description) < 40 {
			t.Errorf("%s: description %q is too thin for a model", tool.Name, tool.Description)
		}
		if !json.Valid(tool.Parameters) {
			t.Errorf("%s: parameters are not valid JSON: %s", tool.Name, tool.Parameters)
			continue
		}
		var s struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(tool.Parameters, &s); err != nil {
			t.Errorf("%s: parameters are not a JSON object: %v", tool.Name, err)
			continue
		}
		if s.Type != "object" || s.Properties == nil {
			t.Errorf("%s: not an object schema with properties: %s", tool.Name, tool.Parameters)
		}
		if s.AdditionalProperties == nil || *s.AdditionalProperties {
			t.Errorf("%s: additionalProperties must be false: %s", tool.Name, tool.Parameters)
		}
		var props []string
		for name, raw := range s.Properties {
			props = append(props, name)
			var prop struct {
				Description string `json:"description"`
			}
			if err := json.Unmarshal(raw, &prop); err != nil || prop.Description == "" {
				t.Errorf("%s: property %q has no description", tool.Name, name)
			}
		}
		slices.Sort(props)
		required := slices.Sorted(slices.Values(s.Required))
		if !slices.Equal(props, required) {
			t.Errorf("%s: required %q, properties %q: every property must be required", tool.Name, s.Required, props)
		}

		// Every tool is dispatched by Call: call it with arguments built
		// from its own schema.
		if !p.Handles(tool.Name) {
			t.Errorf("Handles(%q) = false", tool.Name)
		}
		args := map[string]any{}
		for _, name := range s.Required {
			args[name] = "x"
		}
		b, _ := json.Marshal(args)
		if _, err := p.Call(context.Background(), tool.Name, string(b)); err != nil {
			t.Errorf("Call(%s, %s) = %v", tool.Name, b, err)
		}
	}
	if !slices.Equal(names, wantNames) {
		t.Errorf("tool names %q, want %q", names, wantNames)
	}
	if p.Handles("scratchpad_nope") || p.Handles("") {
		t.Error("Handles accepts an unknown name")
	}
	// The descriptions state the Pad's limits.
	small := New(Options{MaxVariables: 7, MaxObservations: 11})
	for _, tool := range small.Tools() {
		if tool.Name == ToolStore && !strings.Contains(tool.Description, "7 variables") {
			t.Errorf("store description does not state the limit: %s", tool.Description)
		}
		if tool.Name == ToolObserve && !strings.Contains(tool.Description, "last 11") {
			t.Errorf("observe description does not state the limit: %s", tool.Description)
		}
	}
}

func TestCall(t *testing.T) {
	ctx := context.Background()
	p := New(Options{MaxEntryBytes: 30})
	steps := []struct {
		name, args, want string
	}{
		{ToolContext, ``, "the scratchpad is empty"},
		{ToolStore, `{"key":"user_id","value":12345}`, `stored "user_id"`},
		{ToolStore, `{"value":{"first": "John", "tags":["a"]}, "key":"user"}`, `stored "user"`},
		{ToolStore, `{"key":"nothing","value":null}`, `stored "nothing"`},
		{ToolRecall, `{"key":"user_id"}`, `12345`},
		{ToolRecall, `{"key":"user"}`, `{"first":"John","tags":["a"]}`},
		{ToolRecall, `{"key":"nothing"}`, `null`},
		{ToolRecall, `{"key":"x"}`, `no variable named "x"`},
		{ToolDelete, `{"key":"nothing"}`, `deleted "nothing"`},
		{ToolDelete, `{"key":"nothing"}`, `no variable named "nothing"`},
		{ToolObserve, `{"text":"Found user in database"}`, "observation recorded"},
		{ToolObserve, `{"text":"` + strings.Repeat("long ", 20) + `"}`, "observation recorded (truncated to 29 bytes)"},
		{ToolFail, `{"text":"Tried to update without permission"}`, "failure recorded (truncated to 30 bytes)"},
		{ToolFail, `{"text":"GET /users/x 404"}`, "failure recorded"},
		{ToolContext, `{}`, `Stored Variables:
  user: {"first":"John","tags":["a"]}
  user_id: 12345
Observations:
  - Found user in database
  - long long long… [truncated]
Failed Attempts:
  - Tried to update… [truncated]
  - GET /users/x 404`},
	}
	for _, s := range steps {
		got, err := p.Call(ctx, s.name, s.args)
		if err != nil || got != s.want {
			t.Errorf("Call(%s, %s) = %q, %v; want %q", s.name, s.args, got, err, s.want)
		}
	}
}

func TestCallErrors(t *testing.T) {
	ctx := context.Background()
	p := New(Options{MaxVariables: 1, MaxValueBytes: 16})
	if _, err := p.Call(ctx, ToolStore, `{"key":"a","value":1}`); err != nil {
		t.Fatal(err)
	}
	argCases := []struct {
		name, args, field string
	}{
		{ToolStore, `not json`, ""},
		{ToolStore, `{"key":"a"`, ""},
		{ToolStore, `[]`, ""},
		{ToolStore, `null`, ""},
		{ToolStore, `"text"`, ""},
		{ToolStore, `{"key":"a","value":1} {}`, ""},
		{ToolStore, `{}`, "key"},
		{ToolStore, `{"key":"a"}`, "value"},
		{ToolStore, `{"value":1}`, "key"},
		{ToolStore, `{"key":1,"value":1}`, "key"},
		{ToolStore, `{"key":null,"value":1}`, "key"},
		{ToolStore, `{"key":"a","value":1,"ttl":5}`, "ttl"},
		{ToolRecall, `{"key":["a"]}`, "key"},
		{ToolRecall, `{"name":"a"}`, "name"},
		{ToolDelete, ``, "key"},
		{ToolObserve, `{"text":true}`, "text"},
		{ToolObserve, `{"text":"   "}`, "text"},
		{ToolFail, `{"text":""}`, "text"},
		{ToolFail, `{"error":"x"}`, "error"},
		{ToolContext, `{"verbose":true}`, "verbose"},
		{ToolContext, `[]`, ""},
	}
	for _, c := range argCases {
		_, err := p.Call(ctx, c.name, c.args)
		var ae *ArgumentError
		if !errors.Is(err, ErrInvalidArguments) || !errors.As(err, &ae) {
			t.Errorf("Call(%s, %s) = %v, want an ArgumentError", c.name, c.args, err)
			continue
		}
		if ae.Tool != c.name || ae.Field != c.field {
			t.Errorf("Call(%s, %s): error names tool %q field %q, want %q %q", c.name, c.args, ae.Tool, ae.Field, c.name, c.field)
		}
		if c.field != "" && !strings.Contains(err.Error(), `"`+c.field+`"`) {
			t.Errorf("Call(%s, %s): message %q does not name the field", c.name, c.args, err)
		}
	}

	opCases := []struct {
		name, args string
		want       error
	}{
		{"", `{}`, ErrUnknownTool},
		{"scratchpad_list", `{}`, ErrUnknownTool},
		{"Scratchpad_store", `{"key":"a","value":1}`, ErrUnknownTool},
		{ToolStore, `{"key":"","value":1}`, ErrInvalidKey},
		{ToolStore, `{"key":"a\nb","value":1}`, ErrInvalidKey},
		{ToolStore, `{"key":"b","value":1}`, ErrFull},
		{ToolStore, `{"key":"a","value":"this is too long"}`, ErrValueTooLarge},
	}
	for _, c := range opCases {
		if _, err := p.Call(ctx, c.name, c.args); !errors.Is(err, c.want) {
			t.Errorf("Call(%q, %s) = %v, want %v", c.name, c.args, err, c.want)
		}
	}
	if got := p.Context(); got != "Stored Variables:\n  a: 1" {
		t.Errorf("failed calls changed the pad:\n%s", got)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Call(cancelled, ToolStore, `{"key":"a","value":2}`); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: error = %v", err)
	}
	if v, _ := p.Recall("a"); string(v) != "1" {
		t.Error("a call with a cancelled context ran")
	}
}
