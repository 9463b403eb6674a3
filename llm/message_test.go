package llm

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestMessageMarshal(t *testing.T) {
	tests := []struct {
		name string
		msg  Message
		want string
	}{
		{"text", Message{Role: "user", Content: TextContent("hi")}, `{"role":"user","content":"hi"}`},
		{"empty content, no tool calls", Message{Role: "assistant"}, `{"role":"assistant","content":""}`},
		{"tool calls only", Message{Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Type: "function", Function: FunctionCall{Name: "f", Arguments: "{}"}}}},
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`},
		{"text and tool calls", Message{Role: "assistant", Content: TextContent("let me check"), ToolCalls: []ToolCall{{ID: "c1", Function: FunctionCall{Name: "f"}}}},
			`{"role":"assistant","content":"let me check","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":""}}]}`},
		{"tool result", Message{Role: "tool", ToolCallID: "c1", Name: "f", Content: TextContent("42")},
			`{"role":"tool","content":"42","name":"f","tool_call_id":"c1"}`},
		{"parts", Message{Role: "user", Content: PartsContent(TextPart("look"), ImagePart("data:image/png;base64,AAAA", ""))},
			`{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}`},
		{"text plus parts", Message{Role: "user", Content: Content{Text: "first", Parts: []ContentPart{ImagePart("u", "high")}}},
			`{"role":"user","content":[{"type":"text","text":"first"},{"type":"image_url","image_url":{"url":"u","detail":"high"}}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.msg)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
			// Pointers marshal the same way.
			if b2, _ := json.Marshal(&tt.msg); string(b2) != string(b) {
				t.Errorf("pointer marshal differs: %s", b2)
			}
		})
	}
}

func TestMessageRoundTrip(t *testing.T) {
	msgs := []Message{
		{Role: "system", Content: TextContent("sys")},
		{Role: "user", Content: PartsContent(TextPart("a"), ImagePart("http://i", "auto"))},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "1", Type: "function", Function: FunctionCall{Name: "f", Arguments: `{"x":1}`}}}},
		{Role: "tool", ToolCallID: "1", Content: TextContent("ok")},
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	var got []Message
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, msgs) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, msgs)
	}
}

func TestContentUnmarshal(t *testing.T) {
	tests := []struct {
		in   string
		want Content
	}{
		{`"plain"`, TextContent("plain")},
		{`""`, Content{}},
		{`null`, Content{}},
		{`[]`, Content{}},
		{` [ {"type":"text","text":"a"} ] `, PartsContent(TextPart("a"))},
		{`[{"type":"image_url","image_url":{"url":"http://x","detail":"low"}}]`, PartsContent(ImagePart("http://x", "low"))},
		{`[{"type":"image_url","image_url":"http://x"}]`, PartsContent(ImagePart("http://x", ""))},
		{`[{"type":"text","text":null}]`, PartsContent(TextPart(""))},
		{`[{"type":"refusal","refusal":"no"}]`, PartsContent(ContentPart{Type: "refusal"})},
	}
	for _, tt := range tests {
		c := Content{Text: "stale", Parts: []ContentPart{TextPart("stale")}}
		if err := json.Unmarshal([]byte(tt.in), &c); err != nil {
			t.Errorf("Unmarshal(%s): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(c, tt.want) {
			t.Errorf("Unmarshal(%s) = %#v, want %#v", tt.in, c, tt.want)
		}
	}
	for _, in := range []string{`42`, `true`, `{"text":"a"}`, `[1]`, `["a"]`, `[{"type":"text","text":5}]`, `[{"type":"image_url","image_url":7}]`} {
		var c Content
		if err := json.Unmarshal([]byte(in), &c); err == nil {
			t.Errorf("Unmarshal(%s) = %#v, want error", in, c)
		}
	}
}

func TestContentString(t *testing.T) {
	c := Content{Text: "intro", Parts: []ContentPart{TextPart("a"), ImagePart("u", ""), TextPart("b")}}
	if s := c.String(); s != "intro\na\nb" {
		t.Errorf("String() = %q", s)
	}
	if !(Content{}).IsZero() || TextContent("x").IsZero() || PartsContent(ImagePart("u", "")).IsZero() {
		t.Error("IsZero wrong")
	}
}

func TestFunctionCallArgumentsForms(t *testing.T) {
	tests := map[string]string{
		`{"name":"f","arguments":"{\"a\":1}"}`:      `{"a":1}`,
		`{"name":"f","arguments":{ "a" : [1, 2] }}`: `{"a":[1,2]}`,
		`{"name":"f","arguments":null}`:             ``,
		`{"name":"f"}`:                              ``,
	}
	for in, want := range tests {
		var f FunctionCall
		if err := json.Unmarshal([]byte(in), &f); err != nil {
			t.Errorf("Unmarshal(%s): %v", in, err)
			continue
		}
		if f.Name != "f" || f.Arguments != want {
			t.Errorf("Unmarshal(%s) = %+v, want arguments %q", in, f, want)
		}
	}
}
