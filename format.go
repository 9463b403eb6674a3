package agentmem

import (
	"strings"

	"github.com/agentmem/agentmem/tokenizer"
)

// Format renders steps as the messages of one chat API. agentmem provides
// OpenAI's chat format here; package render adds Anthropic's messages
// format and the observation-as-user format.
//
// A format renders each step on its own: StepMessages must depend only on
// the step and the options. So rendered messages and their token counts
// can be computed once per step and cached. Assemble then joins the
// messages of the steps chosen for a context. For example, it merges
// adjacent same-role messages for APIs that require strict alternation.
type Format interface {
	// Name identifies the format, e.g. "openai".
	Name() string
	// StepMessages renders one step.
	StepMessages(s Step, opts RenderOptions) []Message
	// Assemble joins the messages of consecutive steps into a request's
	// message list. It may merge adjacent messages and insert messages an
	// API requires. delta is the exact change in cost this makes under c:
	// -MessageOverhead per merge, plus the cost of inserted messages. It
	// must not drop or reorder content. It may modify msgs in place.
	Assemble(msgs []Message, c tokenizer.Counter) (out []Message, delta int)
}

// OpenAI is OpenAI's chat-completions format: tool calls on assistant
// messages, each result a "tool" message with its tool_call_id. Agent
// calls become user messages naming the calling agent, and agent responses
// become assistant messages. It is the default format of a Memory.
//
// The API takes images only from the user, so images elsewhere are shown
// as follows. A tool result's images are described in its tool message
// (Image.Describe). They are also shown in one user message after the
// step's last tool message, as smolagents shows a step's observation
// images. In it, each result's images come after the text
// "Images returned by tool call ID (NAME):" (ToolImagesText). So the model
// sees them, and the tool messages still follow their calls as the API
// requires. An assistant's images are described in its text
// (DescribeImages).
var OpenAI Format = openAIFormat{}

type openAIFormat struct{}

func (openAIFormat) Name() string { return "openai" }

func (openAIFormat) StepMessages(s Step, opts RenderOptions) []Message {
	msgs := s.Messages(opts)
	out := make([]Message, 0, len(msgs)+1)
	var shown Content // the tool results' images, for a user message
	for i, m := range msgs {
		m = ChatRoles(m)
		switch m.Role {
		case RoleTool:
			if imgs := contentImages(m.Content); len(imgs) > 0 {
				shown = append(shown, TextPart(ToolImagesText(m.ToolCallID, m.Name)))
				for _, img := range imgs {
					shown = append(shown, ImagePart(img))
				}
				m = DescribeImages(m)
			}
			m.Name = "" // OpenAI's tool messages have no name field
		case RoleAssistant:
			m = DescribeImages(m)
		}
		out = append(out, m)
		if len(shown) > 0 && (i+1 == len(msgs) || msgs[i+1].Role != RoleTool) {
			out = append(out, Message{Role: RoleUser, Content: shown, Time: m.Time})
			shown = nil
		}
	}
	return out
}

// ToolImagesText is the text before the images of a tool result that a
// format shows in a user message of their own (see OpenAI). It is
// "Images returned by tool call ID (NAME):", without the name when it is
// empty.
func ToolImagesText(callID, name string) string {
	if name == "" {
		return "Images returned by tool call " + callID + ":"
	}
	return "Images returned by tool call " + callID + " (" + name + "):"
}

// DescribeImages returns m with its image parts replaced by their
// descriptions (Image.Describe). One text part holds its text parts and
// the descriptions, in content order, each on a line of its own. Its other
// parts follow. A message without images is returned as it is. It is how a
// format shows the images of a message whose API role takes none, an
// assistant's in every API. So the model knows they were there.
func DescribeImages(m Message) Message {
	if contentImages(m.Content) == nil {
		return m
	}
	var text []string
	var rest Content
	for _, p := range m.Content {
		switch p.Type {
		case PartText:
			if p.Text != "" {
				text = append(text, p.Text)
			}
		case PartImage:
			text = append(text, p.Image.Describe())
		default:
			rest = append(rest, p)
		}
	}
	m.Content = append(Content{TextPart(strings.Join(text, "\n"))}, rest...)
	return m
}

func (openAIFormat) Assemble(msgs []Message, _ tokenizer.Counter) ([]Message, int) { return msgs, 0 }

// ChatRoles maps the multi-agent roles onto chat roles. An agent_call
// becomes a user message "[Request from NAME]: ..." and an agent_response
// an assistant message. Agent calls and structured data (of any role),
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
