package render

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/tokenizer"
)

// Texts the Anthropic format puts where the API requires content that the
// history does not have.
const (
	// ContinuingText is the text of the user message Assemble inserts when
	// the first message after the system prompt would otherwise be an
	// assistant message. The Messages API refuses that.
	ContinuingText = "(continuing)"
	// EmptyText stands in for the content of a user or assistant message
	// that has none. The Messages API refuses empty messages and empty text
	// blocks.
	EmptyText = "(empty)"
)

// Anthropic is the Anthropic Messages API format.
//
// StepMessages renders a step as follows. A system prompt stays a system
// message (Assemble moves it out of the conversation). The model's text
// and tool calls become one assistant message. Its content is a text part
// (if any) followed by one PartToolUse part per call. The results of a
// step become one user message holding a PartToolResult part per result,
// in call order, with the result's IsError. The step's observation and
// error follow as text parts in the same message. Agent calls and
// responses become user and assistant messages (agentmem.ChatRoles). Agent
// calls and structured data that have no API field become text parts.
//
// A user's images stay image parts. A tool result's images stay with it
// (the part's Images), since the API's tool_result block holds image
// blocks. An assistant's images, which the API does not take, are
// described in its text (agentmem.DescribeImages). Names are dropped: the
// API has no name field. Empty and whitespace-only text parts are dropped.
// Assistant text loses its trailing whitespace, since the API refuses a
// final assistant message that ends in whitespace. A message left without
// content gets the text EmptyText; a system message is left out instead.
//
// Assemble makes three changes:
//
//   - (a) it merges every system message into one system message at
//     index 0, its parts in order;
//   - (b) it merges adjacent messages of the same role by concatenating
//     their parts, putting tool_result parts first in a merged user
//     message, as the API requires;
//   - (c) it makes the first message after the system prompt a user
//     message.
//
// Assemble reports the exact change in cost: -agentmem.MessageOverhead per
// merge of (a) and (b), plus the cost of a message inserted by (c). Steps
// are rendered so that, after merging, user and assistant strictly
// alternate and each tool_use is answered in the next message.
//
// Case (c) inserts a user message with ContinuingText before a leading
// assistant message. This cannot happen for a memory whose first task is
// pinned and comes before every step that renders an assistant message
// (the usual system prompt, task, actions...). The task's user message
// then comes first. It does happen for a history that opens with an
// assistant greeting and has no task before it. The inserted message's
// cost is counted, and agentmem.Memory.Context fits the rest of the
// request around it.
var Anthropic agentmem.Format = anthropicFormat{}

type anthropicFormat struct{}

func (anthropicFormat) Name() string { return NameAnthropic }

func (anthropicFormat) StepMessages(s agentmem.Step, opts agentmem.RenderOptions) []agentmem.Message {
	var failed map[string]bool
	if a, ok := s.(*agentmem.ActionStep); ok {
		for _, r := range a.Results {
			if r.IsError {
				if failed == nil {
					failed = make(map[string]bool)
				}
				failed[r.CallID] = true
			}
		}
	}
	var out []agentmem.Message
	for _, m := range s.Messages(opts) {
		isErr := m.Role == agentmem.RoleTool && failed[m.ToolCallID]
		b, ok := anthropicMessage(m, isErr)
		if !ok {
			continue
		}
		out, _ = appendMerged(out, b)
	}
	return out
}

func (anthropicFormat) Assemble(msgs []agentmem.Message, c tokenizer.Counter) ([]agentmem.Message, int) {
	var sys *agentmem.Message
	merged := 0
	body := make([]agentmem.Message, 0, len(msgs)+2)
	for _, m := range msgs {
		if m.Role == agentmem.RoleSystem {
			if sys == nil {
				first := m
				sys = &first
			} else {
				sys.Content = concat(sys.Content, m.Content)
				merged++
			}
			continue
		}
		var did bool
		if body, did = appendMerged(body, m); did {
			merged++
		}
	}
	uniqueToolIDs(body)
	delta := -merged * agentmem.MessageOverhead
	if len(body) > 0 && body[0].Role != agentmem.RoleUser {
		cont := agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(ContinuingText)}
		body = append(body, agentmem.Message{})
		copy(body[1:], body)
		body[0] = cont
		if c != nil {
			delta += agentmem.MessageTokens(c, cont)
		}
	}
	if sys != nil {
		body = append(body, agentmem.Message{})
		copy(body[1:], body)
		body[0] = *sys
	}
	return body, delta
}

// anthropicMessage converts one canonical message to Anthropic's block
// form. It reports false for a message that renders nothing (a system
// message without text). isErr marks a tool result as an error; so does
// the "is_error" metadata that agentmem.Memory.AddToolResult records.
func anthropicMessage(m agentmem.Message, isErr bool) (agentmem.Message, bool) {
	m = chatMessage(m)
	m.Name = ""
	switch m.Role {
	case agentmem.RoleTool:
		res := agentmem.Part{
			Type:       agentmem.PartToolResult,
			ToolCallID: m.ToolCallID,
			Text:       m.Content.String(),
			IsError:    isErr || m.Metadata["is_error"] == "true",
			Images:     images(m.Content),
		}
		m.Role, m.Content = agentmem.RoleUser, agentmem.Content{res}
	case agentmem.RoleAssistant:
		m = agentmem.DescribeImages(m) // the API takes no images from the assistant
		if len(m.ToolCalls) > 0 {
			content := make(agentmem.Content, 0, len(m.Content)+len(m.ToolCalls))
			content = append(content, m.Content...)
			for _, tc := range m.ToolCalls {
				content = append(content, agentmem.Part{Type: agentmem.PartToolUse, ToolCall: &tc})
			}
			m.Content, m.ToolCalls = content, nil
		}
	}
	m.ToolCallID = ""
	m.Content = cleanParts(m.Role, m.Content)
	if len(m.Content) == 0 {
		if m.Role == agentmem.RoleSystem {
			return m, false
		}
		m.Content = agentmem.Text(EmptyText)
	}
	return m, true
}

// images returns the images of content's image parts, in order, or nil.
func images(c agentmem.Content) []agentmem.Image {
	var out []agentmem.Image
	for _, p := range c {
		if p.Type == agentmem.PartImage && p.Image != nil {
			out = append(out, *p.Image)
		}
	}
	return out
}

// cleanParts returns a copy of parts without empty or whitespace-only text
// parts, with the trailing whitespace of an assistant's text removed.
func cleanParts(role agentmem.Role, parts agentmem.Content) agentmem.Content {
	out := make(agentmem.Content, 0, len(parts))
	for _, p := range parts {
		if p.Type == agentmem.PartText {
			if role == agentmem.RoleAssistant {
				p.Text = strings.TrimRightFunc(p.Text, unicode.IsSpace)
			}
			if strings.TrimSpace(p.Text) == "" {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// appendMerged appends m to msgs, merging it into the last message when
// both have the same role, and reports whether it merged.
func appendMerged(msgs []agentmem.Message, m agentmem.Message) ([]agentmem.Message, bool) {
	n := len(msgs)
	if n == 0 || msgs[n-1].Role != m.Role {
		return append(msgs, m), false
	}
	prev := &msgs[n-1]
	prev.Content = concat(prev.Content, m.Content)
	if prev.Role == agentmem.RoleUser {
		prev.Content = resultsFirst(prev.Content)
	}
	return msgs, true
}

// concat returns a new slice holding a's parts then b's; neither input is
// modified (they may be a step's cached rendering).
func concat(a, b agentmem.Content) agentmem.Content {
	out := make(agentmem.Content, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}

// resultsFirst moves tool_result parts before the other parts, keeping the
// order within each group. The API requires a user message answering tool
// calls to begin with its tool_result blocks. It reorders in place.
func resultsFirst(c agentmem.Content) agentmem.Content {
	seenOther := false
	needed := false
	for _, p := range c {
		if p.Type != agentmem.PartToolResult {
			seenOther = true
		} else if seenOther {
			needed = true
			break
		}
	}
	if !needed {
		return c
	}
	out := make(agentmem.Content, 0, len(c))
	for _, p := range c {
		if p.Type == agentmem.PartToolResult {
			out = append(out, p)
		}
	}
	for _, p := range c {
		if p.Type != agentmem.PartToolResult {
			out = append(out, p)
		}
	}
	copy(c, out)
	return c
}

// uniqueToolIDs renames tool_use IDs that repeat within a request, and the
// tool_result blocks answering them. Anthropic's API refuses a request in
// which two tool_use blocks share an ID. Some OpenAI-compatible servers
// number calls afresh each turn ("call_0" every time), so a history can
// repeat IDs legitimately. A renamed call gets the suffix "_dupN". IDs are
// not counted, so costs do not change. Parts are replaced, never modified,
// so cached or shared messages are not touched.
func uniqueToolIDs(body []agentmem.Message) {
	seen := make(map[string]int)
	rename := make(map[string]string) // original ID -> new ID, until answered
	for i := range body {
		m := &body[i]
		for j, p := range m.Content {
			switch {
			case p.Type == agentmem.PartToolUse && p.ToolCall != nil:
				id := p.ToolCall.ID
				seen[id]++
				if seen[id] == 1 {
					delete(rename, id)
					continue
				}
				tc := *p.ToolCall
				tc.ID = fmt.Sprintf("%s_dup%d", id, seen[id]-1)
				for seen[tc.ID] > 0 { // a suffixed ID that was already there
					seen[id]++
					tc.ID = fmt.Sprintf("%s_dup%d", id, seen[id]-1)
				}
				seen[tc.ID]++
				rename[id] = tc.ID
				m.Content = replacePart(m.Content, j, agentmem.Part{Type: p.Type, ToolCall: &tc})
			case p.Type == agentmem.PartToolResult:
				if to, ok := rename[p.ToolCallID]; ok {
					p.ToolCallID = to
					m.Content = replacePart(m.Content, j, p)
				}
			}
		}
	}
}

// replacePart returns c with c[j] = p, copying c first.
func replacePart(c agentmem.Content, j int, p agentmem.Part) agentmem.Content {
	out := make(agentmem.Content, len(c))
	copy(out, c)
	out[j] = p
	return out
}
