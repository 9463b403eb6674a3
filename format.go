package agentmem

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
	// message list. It may merge adjacent messages; merged reports how many
	// merges it made, each of which saves MessageOverhead tokens. It must
	// not drop or reorder content. It may modify msgs in place.
	Assemble(msgs []Message) (out []Message, merged int)
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
	}
	return msgs
}

func (openAIFormat) Assemble(msgs []Message) ([]Message, int) { return msgs, 0 }

// ChatRoles maps the multi-agent roles onto chat roles: an agent_call
// becomes a user message "[Request from NAME]: ..." and an agent_response
// an assistant message. Other messages are returned unchanged.
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
	}
	return m
}
