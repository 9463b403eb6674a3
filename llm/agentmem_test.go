package llm_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/llm"
	"github.com/agentmem/agentmem/render"
)

func conversationForWire() []agentmem.Message {
	return []agentmem.Message{
		{Role: agentmem.RoleSystem, Content: agentmem.Text("be brief")},
		{Role: agentmem.RoleUser, Name: "alice", Content: agentmem.Content{agentmem.TextPart("what is on this picture?"),
			agentmem.ImagePart(agentmem.Image{URL: "https://example.com/cat.png", Detail: "low"})}},
		{Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{{ID: "c1", Name: "describe", Arguments: `{"url":"https://example.com/cat.png"}`}}},
		{Role: agentmem.RoleTool, ToolCallID: "c1", Content: agentmem.Text("a cat, 9°C outside")},
		{Role: agentmem.RoleAssistant, Content: agentmem.Text("A cat.")},
	}
}

// FromAgentmem sends exactly what render.OpenAIRequest encodes, and
// ToAgentmem brings it back.
func TestAgentmemConversionsRoundTrip(t *testing.T) {
	msgs := conversationForWire()
	got, err := json.Marshal(llm.FromAgentmem(msgs))
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(render.OpenAIRequest(msgs))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("FromAgentmem encodes\n%s\nrender.OpenAIRequest\n%s", got, want)
	}
	back, err := llm.ToAgentmem(llm.FromAgentmem(msgs))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, msgs) {
		t.Fatalf("round trip:\n%+v\nwant\n%+v", back, msgs)
	}
	if err := render.Validate(render.NameOpenAI, back); err != nil {
		t.Fatal(err)
	}
}

// A model's reply, as the client decodes it, becomes a message to add to
// a memory.
func TestReplyToAgentmem(t *testing.T) {
	var reply llm.Message
	if err := json.Unmarshal([]byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"c9","type":"function","function":{"name":"get_weather","arguments":{"city":"Oslo"}}}]}`), &reply); err != nil {
		t.Fatal(err)
	}
	msgs, err := llm.ToAgentmem([]llm.Message{reply})
	if err != nil {
		t.Fatal(err)
	}
	want := agentmem.Message{Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{{ID: "c9", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}}
	if !reflect.DeepEqual(msgs[0], want) {
		t.Fatalf("reply = %+v", msgs[0])
	}
	// A message decoded into render's type (Content holds []any) converts
	// too.
	var wire []render.OpenAIMessage
	if err := json.Unmarshal([]byte(`[{"role":"user","content":[{"type":"text","text":"hi"}]}]`), &wire); err != nil {
		t.Fatal(err)
	}
	if m := llm.FromOpenAI(wire[0]); m.Content.String() != "hi" || len(m.Content.Parts) != 1 {
		t.Fatalf("FromOpenAI of decoded JSON: %+v", m)
	}
	// What OpenAI would refuse is refused.
	_, err = llm.ToAgentmem([]llm.Message{{Role: "tool", Content: llm.TextContent("x")}})
	var ie *agentmem.InvalidError
	if !errors.As(err, &ie) || ie.Field != "messages[0].tool_call_id" {
		t.Fatalf("tool message without its call: %v", err)
	}
}
