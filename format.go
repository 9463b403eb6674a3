package agentmem

import "github.com/agentmem/agentmem/tokenizer"

// Format renders steps as the messages of one chat API. agentmem provides
// OpenAI's chat format here; package render adds Anthropic's messages
// format and the observation-as-user format.
//
// A format renders each step on its own (StepMessages must depend only on
// the step and the options), so that rendered messages and their token
// counts can be computed once per step and cached. Assemble then joins the
// messages of the steps chosen for a context, for example merging adjacent
// same-role messages for APIs that require strict alternation.
type Format interface {
	// Name identifies the format, e.g. "openai".
	Name() string
	// StepMessages renders one step.
	StepMessages(s Step, opts RenderOptions) []Message
	// Assemble joins the messages of consecutive steps into a request's
	// message list. It may merge adjacent messages and insert messages an
	// API requires; delta is the exact change in cost this makes under c
	// (-MessageOverhead per merge, plus the cost of inserted messages). It
	// must not drop or reorder content. It may modify msgs in place.
	Assemble(msgs []Message, c tokenizer.Counter) (out []Message, delta int)
}

// OpenAI is OpenAI's chat-completions format: tool calls on assistant
// messages, each result a "tool" message with its tool_call_id. Agent calls
// become user messages naming the calling agent and agent responses become
// assistant messages. It is the default format of a Memory.
var OpenAI Format = openAIFormat{}

type openAIFormat struct{}

func (openAIFormat) Name() string { return "openai" }

func (openAIFormat) StepMessages(s Step, opts RenderOptions) []Message {
	msgs := s.Messages(opts)
	for i := range msgs {
		msgs[i] = ChatRoles(msgs[i])
		if msgs[i].Role == RoleTool {
			msgs[i].Name = "" // OpenAI's tool messages have no name field
		}
	}
	return msgs
}

func (openAIFormat) Assemble(msgs []Message, _ tokenizer.Counter) ([]Message, int) { return msgs, 0 }

// ChatRoles maps the multi-agent roles onto chat roles: an agent_call
// becomes a user message "[Request from NAME]: ..." and an agent_response
// an assistant message; agent calls and structured data (of any role),
// which chat APIs have no field for, become text. Other messages are
// returned unchanged.
func ChatRoles(m Message) Message {
	switch m.Role {
	case RoleAgentCall:
		caller := m.Name
		if caller == "" {
			caller = m.Metadata["caller"]
		}
		if caller == "" {
			caller = "another agent"
		}
		text := m.Content.String()
		for _, ac := range m.AgentCalls {
			if text != "" {
				text += "\n"
			}
			text += "(to " + ac.Agent + ") " + ac.Request
		}
		m.Role, m.Name, m.AgentCalls = RoleUser, "", nil
		m.Content = Text("[Request from " + caller + "]: " + text)
	case RoleAgentResponse:
		m.Role = RoleAssistant
		text := m.Content.String()
		for _, ac := range m.AgentCalls {
			if text != "" {
				text += "\n"
			}
			text += "(to " + ac.Agent + ") " + ac.Request
		}
		if len(m.AgentCalls) > 0 {
			m.Content, m.AgentCalls = Text(text), nil
		}
	}
	if len(m.Data) > 0 {
		m.Content = append(cloneContent(m.Content), TextPart(string(m.Data)))
		m.Data = nil
	}
	return m
}
