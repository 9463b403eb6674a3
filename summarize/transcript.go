package summarize

import (
	"strings"

	"github.com/agentmem/agentmem"
)

// Transcript renders messages as plain text for a summarizer prompt, one
// block per message. A block is "ROLE: text", with tool calls as "→
// name(arguments)" and tool results as "← name: result". Each text is
// cut to maxChars bytes (0 means no limit) so one huge observation cannot
// crowd out the rest.
func Transcript(msgs []agentmem.Message, maxChars int) string {
	var b strings.Builder
	for _, m := range msgs {
		text := m.Text()
		if maxChars > 0 {
			text = agentmem.TruncateText(text, maxChars)
		}
		switch m.Role {
		case agentmem.RoleTool:
			b.WriteString("← ")
			if m.Name != "" {
				b.WriteString(m.Name + ": ")
			}
			b.WriteString(text)
		default:
			b.WriteString(strings.ToUpper(string(m.Role)) + ": " + text)
			for _, tc := range m.ToolCalls {
				b.WriteString("\n→ " + tc.Name + "(" + tc.Arguments + ")")
			}
		}
		b.WriteString("\n\n")
	}
	return strings.TrimSpace(b.String())
}
