package langchaingo

import (
	"reflect"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/tmc/langchaingo/llms"
)

// FuzzRoundTrip checks the conversion both ways without a server: a
// message of each type, folded into steps as the history folds it, sent
// through the step JSON the server stores, reads back as it was. kind
// picks the type; inputs a message cannot hold are refused on the way in
// and not checked further.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint8(0), "hello", "", "", "", "", "", "", "")
	f.Add(uint8(1), "You are terse.", "", "", "", "", "", "", "")
	f.Add(uint8(2), "Be shorter.", "critic", "style-bot", "", "", "", "", "")
	f.Add(uint8(3), "sun, rain", "", "forecast", "", "", "", "", "")
	f.Add(uint8(4), "Noon.", "", "", "thinking", "", "", "", "")
	f.Add(uint8(5), "Let me look.", "", "", "two calls", "call_1", "weather", `{"city":"Paris"}`, "function")
	f.Add(uint8(5), "", "", "", "", "call_2", "clock", "", "")
	f.Add(uint8(6), "", "", "", "", "", "forecast", `{"days":3}`, "")
	f.Fuzz(func(t *testing.T, kind uint8, content, role, name, reasoning, callID, callName, args, callType string) {
		var msgs []llms.ChatMessage
		switch kind % 7 {
		case 0:
			msgs = []llms.ChatMessage{llms.HumanChatMessage{Content: content}}
		case 1:
			msgs = []llms.ChatMessage{llms.SystemChatMessage{Content: content}}
		case 2:
			msgs = []llms.ChatMessage{llms.GenericChatMessage{Content: content, Role: role, Name: name}}
		case 3:
			msgs = []llms.ChatMessage{llms.FunctionChatMessage{Name: name, Content: content}}
		case 4:
			msgs = []llms.ChatMessage{llms.AIChatMessage{Content: content, ReasoningContent: reasoning}}
		case 5:
			msgs = []llms.ChatMessage{
				llms.AIChatMessage{Content: content, ReasoningContent: reasoning, ToolCalls: []llms.ToolCall{
					{ID: callID, Type: callType, FunctionCall: &llms.FunctionCall{Name: callName, Arguments: args}}}},
				llms.ToolChatMessage{ID: callID, Content: name},
			}
		case 6:
			msgs = []llms.ChatMessage{llms.AIChatMessage{Content: content, FunctionCall: &llms.FunctionCall{Name: callName, Arguments: args}}}
		}
		in := make([]agentmem.Message, len(msgs))
		for i, m := range msgs {
			am, err := toMessage(m)
			if err != nil {
				return
			}
			in[i] = am
		}
		folded, err := agentmem.FoldMessages(nil, in, agentmem.FoldOptions{KeepPending: true, NewID: agentmem.NewID})
		if err != nil {
			return // not a valid message (invalid UTF-8, a call without an ID, ...)
		}
		steps := make([]agentmem.Step, len(folded.Steps))
		for i, s := range folded.Steps {
			data, err := store.EncodeStep(s)
			if err != nil {
				return
			}
			if steps[i], err = store.DecodeStep(data); err != nil {
				return // metadata a store refuses
			}
		}
		if got := fromSteps(steps); !reflect.DeepEqual(got, msgs) {
			t.Errorf("read back %#v\nwant %#v", got, msgs)
		}
	})
}

// FuzzStepsOfOtherWriters feeds the reading side steps anyone could have
// written (a step's JSON, as the server stores it), langchaingo metadata
// included: it must read each without failing, and give at least the
// messages the step renders as.
func FuzzStepsOfOtherWriters(f *testing.F) {
	f.Add(`{"type":"action","number":1,"metadata":{"langchaingo.type":"ai","langchaingo.function_call":"not json"},"model_output":"hi"}`)
	f.Add(`{"type":"action","number":1,"metadata":{"langchaingo.type":"ai","langchaingo.tool_call_types":"[\"a\",\"b\"]"},"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}`)
	f.Add(`{"type":"task","number":2,"metadata":{"langchaingo.type":"generic"},"task":"x"}`)
	f.Add(`{"type":"system_prompt","number":3,"metadata":{"langchaingo.type":"human"},"content":"s"}`)
	f.Add(`{"type":"message","number":4,"message":{"role":"agent_call","name":"planner","content":"go"}}`)
	f.Add(`{"type":"planning","number":5,"plan":"1. look"}`)
	f.Fuzz(func(t *testing.T, data string) {
		s, err := store.DecodeStep([]byte(data))
		if err != nil {
			return
		}
		got := fromSteps([]agentmem.Step{s})
		if _, own := ownStep(s); !own && !reflect.DeepEqual(got, append([]llms.ChatMessage{}, rendered(s)...)) {
			t.Errorf("step %s read as %#v, not as it renders", data, got)
		}
	})
}
