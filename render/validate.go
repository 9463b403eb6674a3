package render

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/agentmem/agentmem"
)

// Validate checks that msgs would be accepted by the API of a format, as
// the opening of a request. Each message must be valid on its own
// (agentmem.Message.Validate), and
//
//   - "openai": roles are system, user, assistant or tool (system may
//     repeat); each tool message answers a tool call of the latest
//     assistant message that is not yet answered, and every tool call is
//     answered before the next non-tool message and before the end;
//     content has no tool_use or tool_result parts; images appear only in
//     user messages.
//   - "anthropic": at most one system message, first, with text parts
//     only; then user and assistant strictly alternate, starting with
//     user; no tool calls or tool_call_id outside parts; every message has
//     content, and text parts are not blank; each tool_use part (assistant
//     only, with an ID unique in the request and a name) is answered by a
//     tool_result part of the immediately following user message, and
//     every tool_result answers a tool_use of the immediately preceding
//     assistant message and comes before the message's other parts; images
//     appear only in user messages; a final assistant message does not end
//     in whitespace.
//   - "observation": roles are system, user or assistant; no tool calls,
//     tool_call_id, tool_use or tool_result parts; images appear only in
//     user messages.
//
// The list may end with any message: the caller adds the next turn. The
// error wraps agentmem.ErrInvalid and names the offending message by
// index. An unknown format is an error wrapping agentmem.ErrInvalid too.
func Validate(format string, msgs []agentmem.Message) error {
	for i, m := range msgs {
		if err := m.Validate(); err != nil {
			return atIndex(i, err)
		}
	}
	switch format {
	case NameOpenAI:
		return validateOpenAI(msgs)
	case NameAnthropic:
		return validateAnthropic(msgs)
	case NameObservation:
		return validateObservation(msgs)
	}
	return unknownFormat(format)
}

// invalidAt reports a problem with message i.
func invalidAt(i int, format string, args ...any) error {
	return &agentmem.InvalidError{Field: fmt.Sprintf("messages[%d]", i), Reason: fmt.Sprintf(format, args...)}
}

// checkParts refuses block parts (where blocks are false) and images
// outside user messages.
func checkParts(i int, m agentmem.Message, blocks bool, format string) error {
	for j, p := range m.Content {
		switch p.Type {
		case agentmem.PartToolUse, agentmem.PartToolResult:
			if !blocks {
				return invalidAt(i, "content[%d] is a %s part, which the %s format does not have", j, p.Type, format)
			}
		case agentmem.PartImage:
			if m.Role != agentmem.RoleUser {
				return invalidAt(i, "content[%d] is an image in a message of role %s; images are allowed only in user messages", j, m.Role)
			}
		}
	}
	return nil
}

func validateOpenAI(msgs []agentmem.Message) error {
	var open []string // unanswered calls of the latest assistant message, in call order
	for i, m := range msgs {
		if err := checkParts(i, m, false, NameOpenAI); err != nil {
			return err
		}
		switch m.Role {
		case agentmem.RoleTool:
			k := indexOf(open, m.ToolCallID)
			if k < 0 {
				return invalidAt(i, "tool result for %q answers no unanswered tool call of the preceding assistant message", m.ToolCallID)
			}
			open = append(open[:k], open[k+1:]...)
			continue
		case agentmem.RoleSystem, agentmem.RoleUser, agentmem.RoleAssistant:
		default:
			return invalidAt(i, "role %q is not an OpenAI chat role (render agent messages with agentmem.ChatRoles)", m.Role)
		}
		if len(open) > 0 {
			return invalidAt(i, "comes before tool calls %s of an earlier assistant message are answered", quoted(open))
		}
		for _, tc := range m.ToolCalls {
			open = append(open, tc.ID)
		}
	}
	if len(open) > 0 {
		return invalidAt(len(msgs)-1, "tool calls %s are never answered", quoted(open))
	}
	return nil
}

func validateAnthropic(msgs []agentmem.Message) error {
	var pending []string      // tool_use IDs of the previous assistant message, unanswered
	used := map[string]bool{} // every tool_use ID so far
	var last agentmem.Role    // role of the previous non-system message
	for i, m := range msgs {
		if err := checkParts(i, m, true, NameAnthropic); err != nil {
			return err
		}
		if len(m.ToolCalls) > 0 {
			return invalidAt(i, "has tool_calls; Anthropic's tool calls are tool_use parts")
		}
		if m.ToolCallID != "" {
			return invalidAt(i, "has a tool_call_id; Anthropic's tool results are tool_result parts")
		}
		switch m.Role {
		case agentmem.RoleSystem:
			if i != 0 {
				return invalidAt(i, "is a system message after the start; Anthropic takes one system prompt, first")
			}
			for j, p := range m.Content {
				if p.Type != agentmem.PartText {
					return invalidAt(i, "content[%d] of the system prompt is a %s part; only text is allowed", j, p.Type)
				}
			}
			continue
		case agentmem.RoleUser, agentmem.RoleAssistant:
		default:
			return invalidAt(i, "role %q is not an Anthropic role (want user or assistant)", m.Role)
		}
		if last == "" && m.Role != agentmem.RoleUser {
			return invalidAt(i, "the first message after the system prompt must be a user message, not %s", m.Role)
		}
		if m.Role == last {
			return invalidAt(i, "follows another %s message; user and assistant must alternate", m.Role)
		}
		if len(m.Content) == 0 {
			return invalidAt(i, "has no content")
		}
		var err error
		if m.Role == agentmem.RoleUser {
			err = checkUserBlocks(i, m, &pending)
		} else {
			err = checkAssistantBlocks(i, m, used, &pending)
		}
		if err != nil {
			return err
		}
		last = m.Role
	}
	if len(pending) > 0 {
		return invalidAt(len(msgs)-1, "tool_use %s is never answered by a tool_result", quoted(pending))
	}
	if n := len(msgs); n > 0 && msgs[n-1].Role == agentmem.RoleAssistant {
		c := msgs[n-1].Content
		if p := c[len(c)-1]; p.Type == agentmem.PartText && strings.TrimRightFunc(p.Text, unicode.IsSpace) != p.Text {
			return invalidAt(n-1, "a final assistant message must not end in whitespace")
		}
	}
	return nil
}

// checkUserBlocks checks a user message's parts against the tool_use
// parts of the preceding assistant message, which it must all answer.
func checkUserBlocks(i int, m agentmem.Message, pending *[]string) error {
	other := false
	for j, p := range m.Content {
		switch p.Type {
		case agentmem.PartToolResult:
			if other {
				return invalidAt(i, "content[%d]: tool_result parts must come before the other parts of a user message", j)
			}
			k := indexOf(*pending, p.ToolCallID)
			if k < 0 {
				return invalidAt(i, "content[%d]: tool_result for %q answers no unanswered tool_use of the preceding assistant message", j, p.ToolCallID)
			}
			*pending = append((*pending)[:k], (*pending)[k+1:]...)
			continue
		case agentmem.PartToolUse:
			return invalidAt(i, "content[%d]: a tool_use part in a user message", j)
		case agentmem.PartText:
			if strings.TrimSpace(p.Text) == "" {
				return invalidAt(i, "content[%d]: text parts must not be empty or blank", j)
			}
		}
		other = true
	}
	if len(*pending) > 0 {
		return invalidAt(i, "does not answer tool_use %s of the preceding assistant message", quoted(*pending))
	}
	return nil
}

// checkAssistantBlocks checks an assistant message's parts and records
// its tool_use IDs as pending.
func checkAssistantBlocks(i int, m agentmem.Message, used map[string]bool, pending *[]string) error {
	for j, p := range m.Content {
		switch p.Type {
		case agentmem.PartToolResult:
			return invalidAt(i, "content[%d]: a tool_result part in an assistant message", j)
		case agentmem.PartToolUse:
			tc := p.ToolCall
			if tc.ID == "" || tc.Name == "" {
				return invalidAt(i, "content[%d]: a tool_use part needs an ID and a name", j)
			}
			if used[tc.ID] {
				return invalidAt(i, "content[%d]: tool_use ID %q is used twice", j, tc.ID)
			}
			used[tc.ID] = true
			*pending = append(*pending, tc.ID)
		case agentmem.PartText:
			if strings.TrimSpace(p.Text) == "" {
				return invalidAt(i, "content[%d]: text parts must not be empty or blank", j)
			}
		}
	}
	return nil
}

func validateObservation(msgs []agentmem.Message) error {
	for i, m := range msgs {
		if err := checkParts(i, m, false, NameObservation); err != nil {
			return err
		}
		switch m.Role {
		case agentmem.RoleSystem, agentmem.RoleUser, agentmem.RoleAssistant:
		case agentmem.RoleTool:
			return invalidAt(i, "is a tool message; the observation format has no tool role")
		default:
			return invalidAt(i, "role %q is not a chat role (want system, user or assistant)", m.Role)
		}
		if len(m.ToolCalls) > 0 {
			return invalidAt(i, "has tool_calls; the observation format writes calls as Action lines")
		}
		if m.ToolCallID != "" {
			return invalidAt(i, "has a tool_call_id; the observation format has no tool results")
		}
	}
	return nil
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func quoted(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return strings.Join(q, ", ")
}
