package render

import (
	"fmt"
	"strings"

	"github.com/agentmem/agentmem"
)

// Format names accepted by ByName, Encode and Validate.
const (
	NameOpenAI      = "openai"
	NameAnthropic   = "anthropic"
	NameObservation = "observation"
)

// OpenAI is OpenAI's chat-completions format, the canonical format of
// package agentmem; it is agentmem.OpenAI.
var OpenAI = agentmem.OpenAI

// Names returns the names ByName knows, sorted. The slice is the caller's.
func Names() []string {
	return []string{NameAnthropic, NameObservation, NameOpenAI}
}

// ByName returns the format with the given name: "openai", "anthropic" or
// "observation". An unknown name is an error wrapping agentmem.ErrInvalid.
func ByName(name string) (agentmem.Format, error) {
	switch name {
	case NameOpenAI:
		return OpenAI, nil
	case NameAnthropic:
		return Anthropic, nil
	case NameObservation:
		return Observation, nil
	}
	return nil, unknownFormat(name)
}

// Encode returns the request body value for the messages of a format:
// []OpenAIMessage for "openai" and "observation", and AnthropicBody for
// "anthropic". The observation format uses OpenAI's wire shape without
// tools. The result marshals to the JSON the API expects. An unknown name
// is an error wrapping agentmem.ErrInvalid.
func Encode(format string, msgs []agentmem.Message) (any, error) {
	switch format {
	case NameOpenAI, NameObservation:
		return OpenAIRequest(msgs), nil
	case NameAnthropic:
		return AnthropicRequest(msgs), nil
	}
	return nil, unknownFormat(format)
}

func unknownFormat(name string) error {
	return &agentmem.InvalidError{
		Field:  "format",
		Reason: fmt.Sprintf("unknown format %q (known: %s)", name, strings.Join(Names(), ", ")),
	}
}

// foldExtras moves what no chat API has a field for into text parts, so
// that the model sees what agentmem counts. Each agent call becomes a "(to
// AGENT) REQUEST" part, as agentmem.ChatRoles writes them, and structured
// data becomes its JSON text. The message's content slice is not modified;
// a new one is made.
func foldExtras(m agentmem.Message) agentmem.Message {
	if len(m.AgentCalls) == 0 && len(m.Data) == 0 {
		return m
	}
	content := make(agentmem.Content, 0, len(m.Content)+len(m.AgentCalls)+1)
	content = append(content, m.Content...)
	for _, ac := range m.AgentCalls {
		content = append(content, agentmem.TextPart("(to "+ac.Agent+") "+ac.Request))
	}
	if len(m.Data) > 0 {
		content = append(content, agentmem.TextPart(string(m.Data)))
	}
	m.Content, m.AgentCalls, m.Data = content, nil, nil
	return m
}

// chatMessage maps a message onto the chat roles and folds its extras.
func chatMessage(m agentmem.Message) agentmem.Message {
	return foldExtras(agentmem.ChatRoles(m))
}
