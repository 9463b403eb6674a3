package render

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/tokenizer"
)

// Observation is tinyAgent's observation-as-user format, for providers
// whose chat API has no tool role. Messages keep OpenAI's shape but carry
// no tool calls and no tool messages:
//
//   - the assistant message is the model's output followed, for each tool
//     call, by a line "Action: NAME ARGUMENTS_JSON" (the arguments
//     compacted onto one line when they are valid JSON, "{}" when empty);
//   - the results of a step become one user message "Observation: CONTENT"
//     ("Error: CONTENT" for an error result). When the step made more than
//     one call, each result is labelled with its tool's name,
//     "Observation (NAME): CONTENT", and the results are separated by blank
//     lines. The step's observation and error follow in the same message,
//     and then the results' images, in call order;
//   - an assistant's images are described in its text
//     (agentmem.DescribeImages): the APIs take images from the user only;
//   - agent calls and responses become user and assistant messages
//     (agentmem.ChatRoles), their agent calls and structured data text.
//
// Assemble returns the messages unchanged: their cost does not change.
var Observation agentmem.Format = observationFormat{}

type observationFormat struct{}

func (observationFormat) Name() string { return NameObservation }

func (observationFormat) StepMessages(s agentmem.Step, opts agentmem.RenderOptions) []agentmem.Message {
	msgs := s.Messages(opts)
	a, isAction := s.(*agentmem.ActionStep)
	if !isAction {
		for i := range msgs {
			msgs[i] = chatMessage(msgs[i])
			if msgs[i].Role == agentmem.RoleAssistant {
				msgs[i] = agentmem.DescribeImages(msgs[i])
			}
		}
		return msgs
	}
	out := make([]agentmem.Message, 0, 2)
	var user []string // the texts of the step's one user message
	var shown agentmem.Content
	userID := ""
	for _, m := range msgs {
		m = chatMessage(m)
		switch m.Role {
		case agentmem.RoleAssistant:
			out = append(out, actionMessage(agentmem.DescribeImages(m)))
		case agentmem.RoleTool:
			if userID == "" {
				userID = m.ID
			}
			user = append(user, resultText(a, m))
			for _, img := range images(m.Content) {
				shown = append(shown, agentmem.ImagePart(img))
			}
		default:
			user = append(user, m.Content.String())
		}
	}
	if len(user) > 0 {
		out = append(out, agentmem.Message{
			ID:      userID,
			Role:    agentmem.RoleUser,
			Content: append(agentmem.Text(strings.Join(user, "\n\n")), shown...),
			Time:    a.Time,
		})
	}
	return out
}

func (observationFormat) Assemble(msgs []agentmem.Message, _ tokenizer.Counter) ([]agentmem.Message, int) {
	return msgs, 0
}

// actionMessage writes an assistant message's tool calls as Action lines
// after its text.
func actionMessage(m agentmem.Message) agentmem.Message {
	if len(m.ToolCalls) == 0 {
		return m
	}
	var b strings.Builder
	b.WriteString(m.Content.String())
	for _, tc := range m.ToolCalls {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString("Action: " + tc.Name + " " + oneLineJSON(tc.Arguments))
	}
	m.Content, m.ToolCalls = agentmem.Text(b.String()), nil
	return m
}

// oneLineJSON compacts valid JSON arguments onto one line; other text is
// kept as the model wrote it, and empty arguments are "{}".
func oneLineJSON(args string) string {
	if strings.TrimSpace(args) == "" {
		return "{}"
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(args)); err != nil {
		return args
	}
	return buf.String()
}

// resultText renders one tool message of action a as an observation.
func resultText(a *agentmem.ActionStep, m agentmem.Message) string {
	label := "Observation"
	for _, r := range a.Results {
		if r.CallID == m.ToolCallID && r.IsError {
			label = "Error"
		}
	}
	if len(a.Results) > 1 {
		name := m.Name
		for _, tc := range a.ToolCalls {
			if tc.ID == m.ToolCallID {
				name = tc.Name
			}
		}
		label += " (" + name + ")"
	}
	return label + ": " + m.Content.String()
}
