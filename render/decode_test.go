package render_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
)

func TestDecodeOpenAIMessages(t *testing.T) {
	in := `[
	  {"role":"developer","content":"Be terse."},
	  {"role":"user","name":"ann","content":[{"type":"text","text":"look"},{"type":"text","text":""},{"type":"image_url","image_url":{"url":"https://x.test/i.png","detail":"high"}}]},
	  {"role":"assistant","content":null,"refusal":null,"annotations":[],"audio":null,"function_call":null,
	   "tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"c2","function":{"name":"g"}}]},
	  {"role":"tool","tool_call_id":"c1","content":"one"},
	  {"role":"tool","tool_call_id":"c2","content":[{"type":"text","text":"two"}]},
	  {"role":"assistant","content":"","refusal":"I can't."},
	  {"role":"user","content":""}
	]`
	got, err := render.DecodeOpenAIMessages([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	checkShow(t, "decoded", got, `system: text("Be terse.")
user[ann]: text("look") image(https://x.test/i.png)
assistant: call(c1 f {"a":1}) call(c2 g )
tool: text("one") answers(c1)
tool: text("two") answers(c2)
assistant: text("I can't.")
user:
`)
	if got[1].Content[1].Image.Detail != "high" {
		t.Errorf("detail lost: %+v", got[1].Content[1].Image)
	}
	if err := render.Validate("openai", got); err != nil {
		t.Error(err)
	}
	// Encoding and decoding again gives the same messages.
	back, err := render.DecodeOpenAIMessages([]byte(mustJSON(t, render.OpenAIRequest(got))))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, got) {
		t.Errorf("round trip:\n%s\nwant:\n%s", show(back), show(got))
	}
}

func TestDecodeOpenAIMessagesErrors(t *testing.T) {
	tests := []struct {
		in    string
		field string // the error's field
		why   string // a fragment of the reason
	}{
		{``, "messages", "JSON array"},
		{`{"role":"user"}`, "messages", "JSON array"},
		{`[{"role":"user","content":"x"}] []`, "messages", "not valid JSON"},
		{`[{"role":"user","content":"x"},"hi"]`, "messages[1]", "JSON object"},
		{`[{"content":"x"}]`, "messages[0].role", "required"},
		{`[{"role":"robot","content":"x"}]`, "messages[0].role", `unknown role "robot"`},
		{`[{"role":"agent_call","content":"x"}]`, "messages[0].role", "unknown role"},
		{`[{"role":"function","name":"f","content":"x"}]`, "messages[0].role", "deprecated"},
		{`[{"role":"user","content":"x","id":"m1"}]`, "messages[0].id", "unknown field"},
		{`[{"Role":"user","content":"x"}]`, "messages[0].Role", "unknown field"},
		{`[{"role":"user"}]`, "messages[0].content", "required"},
		{`[{"role":"user","content":null}]`, "messages[0].content", "required"},
		{`[{"role":"user","content":42}]`, "messages[0].content", "string, an array"},
		{`[{"role":"user","content":[]}]`, "messages[0].content", "empty array"},
		{`[{"role":"user","content":[{"type":"input_audio"}]}]`, "messages[0].content[0].type", "unsupported"},
		{`[{"role":"user","content":[{"text":"x"}]}]`, "messages[0].content[0].type", "required"},
		{`[{"role":"user","content":[{"type":"text"}]}]`, "messages[0].content[0].text", "required"},
		{`[{"role":"user","content":[{"type":"text","text":"x","cache_control":{}}]}]`, "messages[0].content[0].cache_control", "unknown field"},
		{`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x"}}]}]`, "messages[0].content[0].image_url.url", "http(s) or data:"},
		{`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x","detail":"max"}}]}]`, "messages[0].content[0].image_url.detail", "low, high or auto"},
		{`[{"role":"user","content":[{"type":"image_url"}]}]`, "messages[0].content[0].image_url", "required"},
		{`[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x"}}]}]`, "messages[0].content[0]", "not in a system message"},
		{`[{"role":"user","content":"x"},{"role":"assistant"}]`, "messages[1].content", "without tool calls"},
		{`[{"role":"assistant","content":"x","tool_calls":{}}]`, "messages[0].tool_calls", "array"},
		{`[{"role":"user","content":"x","tool_calls":[]}]`, "messages[0].tool_calls", "only allowed on an assistant"},
		{`[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f"}}]}]`, "messages[0].tool_calls[0].id", "required"},
		{`[{"role":"assistant","tool_calls":[{"id":"a","type":"custom","function":{"name":"f"}}]}]`, "messages[0].tool_calls[0].type", "unsupported"},
		{`[{"role":"assistant","tool_calls":[{"id":"a"}]}]`, "messages[0].tool_calls[0].function", "required"},
		{`[{"role":"assistant","tool_calls":[{"id":"a","function":{"arguments":"{}"}}]}]`, "messages[0].tool_calls[0].function.name", "required"},
		{`[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":{}}}]}]`, "messages[0].tool_calls[0].function.arguments", "must be a string"},
		{`[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f"}},{"id":"a","function":{"name":"g"}}]}]`, "messages[0].tool_calls[1].id", "duplicate"},
		{`[{"role":"tool","content":"x"}]`, "messages[0].tool_call_id", "required"},
		{`[{"role":"user","content":"x","tool_call_id":"a"}]`, "messages[0].tool_call_id", "only allowed on a tool"},
		{`[{"role":"user","content":"x","refusal":"no"}]`, "messages[0].refusal", "only allowed on an assistant"},
		{`[{"role":"assistant","content":"x","audio":{"id":"a"}}]`, "messages[0].audio", "not supported"},
		{`[{"role":"assistant","content":"x","annotations":{}}]`, "messages[0].annotations", "array"},
		{`[{"role":"user","content":"x","name":7}]`, "messages[0].name", "must be a string"},
	}
	for _, tt := range tests {
		_, err := render.DecodeOpenAIMessages([]byte(tt.in))
		if !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("%s: error %v does not wrap ErrInvalid", tt.in, err)
			continue
		}
		var ie *agentmem.InvalidError
		if !errors.As(err, &ie) || ie.Field != tt.field || !strings.Contains(ie.Reason, tt.why) {
			t.Errorf("%s:\n got field %q reason %q\nwant field %q reason containing %q", tt.in, ie.Field, ie.Reason, tt.field, tt.why)
		}
	}
}
