package llm

import (
	"encoding/json"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
)

// The conversions between the three message types. agentmem.Message is
// the memory's (package agentmem); render.OpenAIMessage is OpenAI's wire
// shape, which render.OpenAIRequest makes from agentmem messages of any
// format and render.FromOpenAIMessages turns back; Message is this
// client's. Every conversion goes through render.OpenAIMessage, so there
// is one path each way:
//
//	agentmem.Message --render.OpenAIRequest--> render.OpenAIMessage --FromOpenAI--> Message
//	Message --Message.OpenAI--> render.OpenAIMessage --render.FromOpenAIMessages--> agentmem.Message
//
// FromAgentmem and ToAgentmem are the two ends joined.

// FromAgentmem converts agentmem messages (a Context's, in any format) to
// messages for Chat: render.OpenAIRequest, then FromOpenAI.
func FromAgentmem(msgs []agentmem.Message) []Message {
	wire := render.OpenAIRequest(msgs)
	out := make([]Message, len(wire))
	for i, m := range wire {
		out[i] = FromOpenAI(m)
	}
	return out
}

// ToAgentmem converts messages of this client, such as a model's reply
// (ChatResponse.Message), to agentmem messages, ready for
// agentmem.Memory.AddMessage: Message.OpenAI, then
// render.FromOpenAIMessages, whose rules they must follow (errors wrap
// agentmem.ErrInvalid).
func ToAgentmem(msgs []Message) ([]agentmem.Message, error) {
	wire := make([]render.OpenAIMessage, len(msgs))
	for i, m := range msgs {
		wire[i] = m.OpenAI()
	}
	return render.FromOpenAIMessages(wire)
}

// FromOpenAI converts a message of OpenAI's wire shape, as package render
// encodes it, to a Message. Its Content may be a string, nil,
// []render.OpenAIPart or what encoding/json decodes a content value to;
// content of another type is kept as its JSON text.
func FromOpenAI(m render.OpenAIMessage) Message {
	out := Message{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID}
	for _, tc := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Type: tc.Type, Function: FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
	}
	switch c := m.Content.(type) {
	case nil:
	case string:
		out.Content = TextContent(c)
	case []render.OpenAIPart:
		for _, p := range c {
			part := ContentPart{Type: p.Type, Text: p.Text}
			if p.ImageURL != nil {
				part.ImageURL, part.Detail = p.ImageURL.URL, p.ImageURL.Detail
			}
			out.Content.Parts = append(out.Content.Parts, part)
		}
	default: // decoded from JSON: the same shape, so it decodes again
		data, err := json.Marshal(c)
		if err == nil {
			err = json.Unmarshal(data, &out.Content)
		}
		if err != nil {
			out.Content = TextContent(string(data))
		}
	}
	return out
}

// OpenAI converts m to OpenAI's wire shape as package render encodes it.
// Content is a string, a []render.OpenAIPart (Text then Parts), or nil for
// an assistant message with tool calls and no content.
func (m Message) OpenAI() render.OpenAIMessage {
	out := render.OpenAIMessage{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID}
	for _, tc := range m.ToolCalls {
		typ := tc.Type
		if typ == "" {
			typ = "function"
		}
		out.ToolCalls = append(out.ToolCalls, render.OpenAIToolCall{ID: tc.ID, Type: typ, Function: render.OpenAIFunction{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
	}
	switch {
	case len(m.Content.Parts) > 0:
		var parts []render.OpenAIPart
		if m.Content.Text != "" {
			parts = append(parts, render.OpenAIPart{Type: PartText, Text: m.Content.Text})
		}
		for _, p := range m.Content.Parts {
			part := render.OpenAIPart{Type: p.Type, Text: p.Text}
			if p.Type == PartImageURL || p.ImageURL != "" {
				part.ImageURL = &render.OpenAIImageURL{URL: p.ImageURL, Detail: p.Detail}
			}
			parts = append(parts, part)
		}
		out.Content = parts
	case m.Content.Text == "" && len(m.ToolCalls) > 0:
		out.Content = nil
	default:
		out.Content = m.Content.Text
	}
	return out
}
