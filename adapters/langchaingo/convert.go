package langchaingo

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/tmc/langchaingo/llms"
)

// The step metadata the history writes, so that what a langchaingo
// message holds beyond a chat message comes back as it was.
const (
	// MetaType is the langchaingo type of the message a step holds
	// ("human", "ai", "system", "generic", "function"). Every step the
	// history writes has it; a step without it (written by another
	// client) is read by its rendering as chat messages.
	MetaType = "langchaingo.type"
	// MetaRole and MetaName are a generic message's role and name, and a
	// function message's name.
	MetaRole = "langchaingo.role"
	MetaName = "langchaingo.name"
	// MetaFunctionCall is an AI message's (deprecated) function call, as
	// JSON.
	MetaFunctionCall = "langchaingo.function_call"
	// MetaReasoning is an AI message's reasoning content. It is kept out
	// of the contexts the server renders: models that return reasoning
	// content ask that it not be sent back.
	MetaReasoning = "langchaingo.reasoning_content"
	// MetaToolCallTypes are the types of an AI message's tool calls, as a
	// JSON array, when one is not "function". agentmem gives every tool call
	// the type "function".
	MetaToolCallTypes = "langchaingo.tool_call_types"
)

// toMessage converts a langchaingo message to an agentmem message whose
// metadata holds what the message has beyond a chat message. A tool
// message becomes a tool result. A generic or function message becomes a
// user message, which is what a model should see of it.
func toMessage(msg llms.ChatMessage) (agentmem.Message, error) {
	meta := func(typ llms.ChatMessageType, kv ...string) map[string]string {
		m := map[string]string{MetaType: string(typ)}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] != "" {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	switch m := msg.(type) {
	case nil:
		return agentmem.Message{}, &agentmem.InvalidError{Field: "message", Reason: "is nil"}
	case llms.HumanChatMessage:
		return agentmem.Message{Role: agentmem.RoleUser, Content: text(m.Content), Metadata: meta(llms.ChatMessageTypeHuman)}, nil
	case *llms.HumanChatMessage:
		return toMessage(*m)
	case llms.SystemChatMessage:
		return agentmem.Message{Role: agentmem.RoleSystem, Content: text(m.Content), Metadata: meta(llms.ChatMessageTypeSystem)}, nil
	case *llms.SystemChatMessage:
		return toMessage(*m)
	case llms.GenericChatMessage:
		return agentmem.Message{Role: agentmem.RoleUser, Content: text(m.Content),
			Metadata: meta(llms.ChatMessageTypeGeneric, MetaRole, m.Role, MetaName, m.Name)}, nil
	case *llms.GenericChatMessage:
		return toMessage(*m)
	case llms.FunctionChatMessage:
		return agentmem.Message{Role: agentmem.RoleUser, Content: text(m.Content),
			Metadata: meta(llms.ChatMessageTypeFunction, MetaName, m.Name)}, nil
	case *llms.FunctionChatMessage:
		return toMessage(*m)
	case llms.ToolChatMessage:
		return agentmem.Message{Role: agentmem.RoleTool, ToolCallID: m.ID, Content: text(m.Content)}, nil
	case *llms.ToolChatMessage:
		return toMessage(*m)
	case llms.AIChatMessage:
		return aiMessage(m)
	case *llms.AIChatMessage:
		return toMessage(*m)
	}
	// Another implementation of llms.ChatMessage: what its type and
	// interfaces tell.
	switch msg.GetType() {
	case llms.ChatMessageTypeHuman:
		return toMessage(llms.HumanChatMessage{Content: msg.GetContent()})
	case llms.ChatMessageTypeSystem:
		return toMessage(llms.SystemChatMessage{Content: msg.GetContent()})
	case llms.ChatMessageTypeAI:
		return toMessage(llms.AIChatMessage{Content: msg.GetContent()})
	case llms.ChatMessageTypeGeneric:
		g := llms.GenericChatMessage{Content: msg.GetContent()}
		if n, ok := msg.(llms.Named); ok {
			g.Name = n.GetName()
		}
		return toMessage(g)
	case llms.ChatMessageTypeFunction:
		if n, ok := msg.(llms.Named); ok {
			return toMessage(llms.FunctionChatMessage{Name: n.GetName(), Content: msg.GetContent()})
		}
	case llms.ChatMessageTypeTool:
		if id, ok := msg.(interface{ GetID() string }); ok {
			return toMessage(llms.ToolChatMessage{ID: id.GetID(), Content: msg.GetContent()})
		}
	}
	return agentmem.Message{}, fmt.Errorf("%w: %T of type %q", llms.ErrUnexpectedChatMessageType, msg, msg.GetType())
}

// aiMessage converts an AI message: an assistant message with its tool
// calls, the rest in metadata.
func aiMessage(m llms.AIChatMessage) (agentmem.Message, error) {
	out := agentmem.Message{Role: agentmem.RoleAssistant, Content: text(m.Content),
		Metadata: map[string]string{MetaType: string(llms.ChatMessageTypeAI)}}
	if m.ReasoningContent != "" {
		out.Metadata[MetaReasoning] = m.ReasoningContent
	}
	if m.FunctionCall != nil {
		// JSON would replace invalid UTF-8 without a word.
		if !utf8.ValidString(m.FunctionCall.Name) || !utf8.ValidString(m.FunctionCall.Arguments) {
			return agentmem.Message{}, &agentmem.InvalidError{Field: "function_call", Reason: "is not valid UTF-8"}
		}
		b, err := json.Marshal(m.FunctionCall)
		if err != nil {
			return agentmem.Message{}, err
		}
		out.Metadata[MetaFunctionCall] = string(b)
	}
	types := make([]string, len(m.ToolCalls))
	otherType := false
	for i, tc := range m.ToolCalls {
		if tc.FunctionCall == nil {
			return agentmem.Message{}, &agentmem.InvalidError{Field: fmt.Sprintf("tool_calls[%d].function", i), Reason: "is required"}
		}
		out.ToolCalls = append(out.ToolCalls, agentmem.ToolCall{ID: tc.ID, Name: tc.FunctionCall.Name, Arguments: tc.FunctionCall.Arguments})
		if !utf8.ValidString(tc.Type) {
			return agentmem.Message{}, &agentmem.InvalidError{Field: fmt.Sprintf("tool_calls[%d].type", i), Reason: "is not valid UTF-8"}
		}
		types[i] = tc.Type
		otherType = otherType || tc.Type != "function"
	}
	if otherType {
		b, err := json.Marshal(types)
		if err != nil {
			return agentmem.Message{}, err
		}
		out.Metadata[MetaToolCallTypes] = string(b)
	}
	return out, nil
}

// text is the content of a message's text: none for "".
func text(s string) agentmem.Content {
	if s == "" {
		return nil
	}
	return agentmem.Text(s)
}

// fromSteps converts a working set to langchaingo messages, in order. A
// step the history wrote (MetaType) gives back the message it was made of.
// An action gives the AI message and then one tool message per result (in
// call order). Other steps, and steps whose langchaingo metadata does not
// decode (another writer's), give their rendering as chat messages
// (agentmem.Step.Messages). A user message is a human message, an
// assistant message an AI message, and a tool message a tool message. An
// agent call or response is a generic message with the role's name.
func fromSteps(steps []agentmem.Step) []llms.ChatMessage {
	out := make([]llms.ChatMessage, 0, len(steps))
	for _, s := range steps {
		msgs, ok := ownStep(s)
		if !ok {
			msgs = rendered(s)
		}
		out = append(out, msgs...)
	}
	return out
}

// ownStep returns the messages of a step the history wrote, and false
// for a step it did not.
func ownStep(s agentmem.Step) ([]llms.ChatMessage, bool) {
	md := s.Info().Metadata
	typ := llms.ChatMessageType(md[MetaType])
	switch s := s.(type) {
	case *agentmem.SystemPromptStep:
		if typ == llms.ChatMessageTypeSystem {
			return []llms.ChatMessage{llms.SystemChatMessage{Content: s.Content}}, true
		}
	case *agentmem.TaskStep:
		if len(s.Images) > 0 {
			return nil, false
		}
		switch typ {
		case llms.ChatMessageTypeHuman:
			return []llms.ChatMessage{llms.HumanChatMessage{Content: s.Task}}, true
		case llms.ChatMessageTypeGeneric:
			return []llms.ChatMessage{llms.GenericChatMessage{Content: s.Task, Role: md[MetaRole], Name: md[MetaName]}}, true
		case llms.ChatMessageTypeFunction:
			return []llms.ChatMessage{llms.FunctionChatMessage{Name: md[MetaName], Content: s.Task}}, true
		}
	case *agentmem.ActionStep:
		if typ == llms.ChatMessageTypeAI && s.Thought == "" && s.Code == "" && s.Observation == "" && s.Error == "" {
			return actionMessages(s, md)
		}
	}
	return nil, false
}

// actionMessages returns the AI message of an action the history wrote and
// the tool messages of its results. It returns false when its metadata
// does not decode.
func actionMessages(s *agentmem.ActionStep, md map[string]string) ([]llms.ChatMessage, bool) {
	ai := llms.AIChatMessage{Content: s.ModelOutput, ReasoningContent: md[MetaReasoning]}
	if fc, ok := md[MetaFunctionCall]; ok {
		ai.FunctionCall = new(llms.FunctionCall)
		if err := json.Unmarshal([]byte(fc), ai.FunctionCall); err != nil {
			return nil, false
		}
	}
	types := make([]string, len(s.ToolCalls))
	for i := range types {
		types[i] = "function"
	}
	if ts, ok := md[MetaToolCallTypes]; ok {
		var stored []string
		if err := json.Unmarshal([]byte(ts), &stored); err != nil || len(stored) != len(types) {
			return nil, false
		}
		types = stored
	}
	for i, tc := range s.ToolCalls {
		ai.ToolCalls = append(ai.ToolCalls, llms.ToolCall{ID: tc.ID, Type: types[i],
			FunctionCall: &llms.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
	}
	out := []llms.ChatMessage{ai}
	for _, r := range s.Results {
		out = append(out, llms.ToolChatMessage{ID: r.CallID, Content: r.Content})
	}
	return out, true
}

// rendered converts the chat messages a step renders as.
func rendered(s agentmem.Step) []llms.ChatMessage {
	var out []llms.ChatMessage
	for _, m := range s.Messages(agentmem.RenderOptions{}) {
		switch m.Role {
		case agentmem.RoleSystem:
			out = append(out, llms.SystemChatMessage{Content: m.Text()})
		case agentmem.RoleUser:
			out = append(out, llms.HumanChatMessage{Content: m.Text()})
		case agentmem.RoleAssistant:
			ai := llms.AIChatMessage{Content: m.Text()}
			for _, tc := range m.ToolCalls {
				ai.ToolCalls = append(ai.ToolCalls, llms.ToolCall{ID: tc.ID, Type: "function",
					FunctionCall: &llms.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
			}
			out = append(out, ai)
		case agentmem.RoleTool:
			out = append(out, llms.ToolChatMessage{ID: m.ToolCallID, Content: m.Text()})
		default: // agent_call, agent_response
			out = append(out, llms.GenericChatMessage{Content: m.Text(), Role: string(m.Role), Name: m.Name})
		}
	}
	return out
}
