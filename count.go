package agentmem

import "github.com/agentmem/agentmem/tokenizer"

// The chat cost model. A message costs MessageOverhead tokens plus the
// exact BPE count of its text. A name adds NameOverhead and the name's
// tokens. Every tool call (or tool_use block) adds its name and arguments
// and ToolCallOverhead. Every image adds ImageTokens, whether it is an
// image part or one of a tool_result part's images: every image the model
// is shown costs the same, whoever's message holds it. A request costs the
// sum of its messages plus ReplyPriming. These are OpenAI's documented
// figures for chat messages. Tool-call and image figures follow OpenAI's
// guidance for function calls and low-detail images.
const (
	MessageOverhead  = 4 // <|start|>{role}\n ... <|end|>
	NameOverhead     = 1
	ToolCallOverhead = 3
	ToolResultExtra  = 3 // a tool_result block's framing
	ImageTokens      = 85
	ReplyPriming     = 3 // every reply is primed with <|start|>assistant<|message|>
)

// MessageTokens returns the cost of one message under counter c.
func MessageTokens(c tokenizer.Counter, m Message) int {
	n := MessageOverhead
	if m.Name != "" {
		n += NameOverhead + c.Count(m.Name)
	}
	for _, p := range m.Content {
		n += partTokens(c, p)
	}
	for _, tc := range m.ToolCalls {
		n += toolCallTokens(c, tc)
	}
	for _, ac := range m.AgentCalls {
		n += ToolCallOverhead + c.Count(ac.Agent) + c.Count(ac.Request)
	}
	if len(m.Data) > 0 {
		n += c.Count(string(m.Data))
	}
	return n
}

func partTokens(c tokenizer.Counter, p Part) int {
	switch p.Type {
	case PartImage:
		return ImageTokens
	case PartToolUse:
		if p.ToolCall != nil {
			return toolCallTokens(c, *p.ToolCall)
		}
		return ToolCallOverhead
	case PartToolResult:
		return ToolResultExtra + c.Count(p.Text) + ImageTokens*len(p.Images)
	}
	return c.Count(p.Text)
}

func toolCallTokens(c tokenizer.Counter, tc ToolCall) int {
	return ToolCallOverhead + c.Count(tc.Name) + c.Count(tc.Arguments)
}

// RequestTokens returns the cost of a whole request: its messages plus
// the reply priming.
func RequestTokens(c tokenizer.Counter, msgs []Message) int {
	n := ReplyPriming
	for _, m := range msgs {
		n += MessageTokens(c, m)
	}
	return n
}
