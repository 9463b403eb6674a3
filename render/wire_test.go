package render_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/tokenizer"
)

// fixtureMessages renders the fixture steps in a format and assembles them.
func fixtureMessages(f agentmem.Format) []agentmem.Message {
	var msgs []agentmem.Message
	for _, s := range []agentmem.Step{sysStep, taskStep, actStep, respStep} {
		msgs = append(msgs, stepMessages(f, s, false)...)
	}
	out, _ := f.Assemble(msgs, tokenizer.NewHeuristic())
	return out
}

func TestOpenAIRequestGolden(t *testing.T) {
	msgs := fixtureMessages(render.OpenAI)
	msgs[0].ID, msgs[0].Metadata = "m0", map[string]string{"k": "v"} // agentmem-only: not sent
	got := mustJSON(t, render.OpenAIRequest(msgs))
	want := `[{"role":"system","content":"You are a coder."},` +
		`{"role":"user","content":[{"type":"text","text":"Fix the bug."},{"type":"image_url","image_url":{"url":"https://x.test/a.png"}}]},` +
		`{"role":"assistant","content":"Let me look.\n","tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"a.go\"}"}},{"id":"c2","type":"function","function":{"name":"run","arguments":"{\"cmd\":\"go test\"}"}}]},` +
		`{"role":"tool","content":"package a","tool_call_id":"c1"},` +
		`{"role":"tool","content":"FAIL","tool_call_id":"c2"},` +
		`{"role":"user","content":"Observation:\nstdout"},` +
		`{"role":"user","content":"Error:\nexit 1\nNow let's retry: take care not to repeat previous errors!"},` +
		`{"role":"assistant","content":[{"type":"text","text":"all pass"},{"type":"text","text":"{\"ok\":true}"}],"name":"tester"}]`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestOpenAIRequestContentShapes(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n0000")
	msgs := []agentmem.Message{
		{Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{{ID: "a", Name: "f", Arguments: "{}"}}},
		{Role: agentmem.RoleTool, ToolCallID: "a", Name: "f"},
		{Role: agentmem.RoleAssistant},
		{Role: agentmem.RoleUser, Content: agentmem.Content{
			agentmem.TextPart(""),
			agentmem.ImagePart(agentmem.Image{Data: png, Detail: "low"}),
			agentmem.ImagePart(agentmem.Image{Data: []byte{1}, MediaType: "image/webp"}),
		}},
		{Role: agentmem.RoleAgentCall, Name: "boss", Content: agentmem.Text("go")},
	}
	got := mustJSON(t, render.OpenAIRequest(msgs))
	want := `[{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		`{"role":"tool","content":"","tool_call_id":"a"},` +
		`{"role":"assistant","content":""},` +
		`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgowMDAw","detail":"low"}},{"type":"image_url","image_url":{"url":"data:image/webp;base64,AQ=="}}]},` +
		`{"role":"user","content":"[Request from boss]: go"}]`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestOpenAIRequestFromAnthropicMessages(t *testing.T) {
	// Block-form messages convert back: tool_use parts to tool calls, each
	// tool_result part to a tool message, before the message's other parts.
	got := mustJSON(t, render.OpenAIRequest(fixtureMessages(render.Anthropic)))
	want := `[{"role":"system","content":"You are a coder."},` +
		`{"role":"user","content":[{"type":"text","text":"Fix the bug."},{"type":"image_url","image_url":{"url":"https://x.test/a.png"}}]},` +
		`{"role":"assistant","content":"Let me look.","tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"a.go\"}"}},{"id":"c2","type":"function","function":{"name":"run","arguments":"{\"cmd\":\"go test\"}"}}]},` +
		`{"role":"tool","content":"package a","tool_call_id":"c1"},` +
		`{"role":"tool","content":"FAIL","tool_call_id":"c2"},` +
		`{"role":"user","content":[{"type":"text","text":"Observation:\nstdout"},{"type":"text","text":"Error:\nexit 1\nNow let's retry: take care not to repeat previous errors!"}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"all pass"},{"type":"text","text":"{\"ok\":true}"}]}]`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

const anthropicFixtureJSON = `{"system":"You are a coder.","messages":[` +
	`{"role":"user","content":[{"type":"text","text":"Fix the bug."},{"type":"image","source":{"type":"url","url":"https://x.test/a.png"}}]},` +
	`{"role":"assistant","content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"c1","name":"read_file","input":{"path":"a.go"}},{"type":"tool_use","id":"c2","name":"run","input":{"cmd":"go test"}}]},` +
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"package a","is_error":false},{"type":"tool_result","tool_use_id":"c2","content":"FAIL","is_error":true},{"type":"text","text":"Observation:\nstdout"},{"type":"text","text":"Error:\nexit 1\nNow let's retry: take care not to repeat previous errors!"}]},` +
	`{"role":"assistant","content":[{"type":"text","text":"all pass"},{"type":"text","text":"{\"ok\":true}"}]}]}`

func TestAnthropicRequestGolden(t *testing.T) {
	if got := mustJSON(t, render.AnthropicRequest(fixtureMessages(render.Anthropic))); got != anthropicFixtureJSON {
		t.Errorf("got:\n%s\nwant:\n%s", got, anthropicFixtureJSON)
	}
}

func TestAnthropicRequestFromCanonicalMessages(t *testing.T) {
	// OpenAI-format messages are converted and assembled on the way out;
	// canonical tool messages carry the error flag in their metadata, so
	// the body is exactly the Anthropic format's.
	msgs := fixtureMessages(render.OpenAI)
	var want map[string]any
	if err := json.Unmarshal([]byte(anthropicFixtureJSON), &want); err != nil {
		t.Fatal(err)
	}
	wantJSON := mustJSON(t, want)
	var got map[string]any
	if err := json.Unmarshal([]byte(mustJSON(t, render.AnthropicRequest(msgs))), &got); err != nil {
		t.Fatal(err)
	}
	if g := mustJSON(t, got); g != wantJSON {
		t.Errorf("got:\n%s\nwant:\n%s", g, wantJSON)
	}
}

func TestAnthropicRequestBlocks(t *testing.T) {
	msgs := []agentmem.Message{
		{Role: agentmem.RoleSystem, Content: agentmem.Text("one")},
		{Role: agentmem.RoleAssistant, Content: agentmem.Text("hi")},
		{Role: agentmem.RoleSystem, Content: agentmem.Text("two")},
		{Role: agentmem.RoleUser, Content: agentmem.Content{
			agentmem.ImagePart(agentmem.Image{URL: "data:image/gif;base64,R0lGOD=="}),
			agentmem.ImagePart(agentmem.Image{URL: "data:image/svg+xml,%3Csvg%3E"}),
			agentmem.ImagePart(agentmem.Image{Data: []byte("GIF89a"), MediaType: "image/gif"}),
		}},
		{Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{
			{ID: "a", Name: "f", Arguments: `{ "x" : [1, 2] }`},
			{ID: "b", Name: "g", Arguments: ``},
			{ID: "c", Name: "h", Arguments: `[1]`},
			{ID: "d", Name: "i", Arguments: `{"broken`},
		}},
		{Role: agentmem.RoleTool, ToolCallID: "a", Content: agentmem.Text("1")},
		{Role: agentmem.RoleTool, ToolCallID: "b", Metadata: map[string]string{"is_error": "true"}, Content: agentmem.Text("no")},
		{Role: agentmem.RoleTool, ToolCallID: "c"},
		{Role: agentmem.RoleTool, ToolCallID: "d", Content: agentmem.Text("3")},
	}
	got := mustJSON(t, render.AnthropicRequest(msgs))
	want := `{"system":"one\n\ntwo","messages":[` +
		`{"role":"user","content":[{"type":"text","text":"(continuing)"}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"hi"}]},` +
		`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/gif","data":"R0lGOD=="}},` +
		`{"type":"image","source":{"type":"base64","media_type":"image/svg+xml","data":"PHN2Zz4="}},` +
		`{"type":"image","source":{"type":"base64","media_type":"image/gif","data":"R0lGODlh"}}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{"x":[1,2]}},{"type":"tool_use","id":"b","name":"g","input":{}},` +
		`{"type":"tool_use","id":"c","name":"h","input":{"_raw":"[1]"}},{"type":"tool_use","id":"d","name":"i","input":{"_raw":"{\"broken"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"1","is_error":false},{"type":"tool_result","tool_use_id":"b","content":"no","is_error":true},` +
		`{"type":"tool_result","tool_use_id":"c","is_error":false},{"type":"tool_result","tool_use_id":"d","content":"3","is_error":false}]}]}`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestAnthropicRequestEmpty(t *testing.T) {
	if got := mustJSON(t, render.AnthropicRequest(nil)); got != `{"messages":[]}` {
		t.Errorf("got %s", got)
	}
}

func TestEncode(t *testing.T) {
	msgs := fixtureMessages(render.OpenAI)
	for _, tt := range []struct {
		format string
		want   any
	}{
		{"openai", render.OpenAIRequest(msgs)},
		{"observation", render.OpenAIRequest(msgs)},
		{"anthropic", render.AnthropicRequest(msgs)},
	} {
		got, err := render.Encode(tt.format, msgs)
		if err != nil {
			t.Fatalf("%s: %v", tt.format, err)
		}
		if mustJSON(t, got) != mustJSON(t, tt.want) {
			t.Errorf("%s: Encode differs from the format's encoder", tt.format)
		}
	}
	if _, err := render.Encode("gemini", msgs); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("unknown format: %v", err)
	}
}

func TestByNameAndNames(t *testing.T) {
	for _, name := range render.Names() {
		f, err := render.ByName(name)
		if err != nil || f.Name() != name {
			t.Errorf("ByName(%q) = %v, %v", name, f, err)
		}
	}
	if render.OpenAI != agentmem.OpenAI {
		t.Error("render.OpenAI is not agentmem.OpenAI")
	}
	_, err := render.ByName("claude")
	if !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("unknown name: %v", err)
	}
	if want := `agentmem: invalid format: unknown format "claude" (known: anthropic, observation, openai)`; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}
