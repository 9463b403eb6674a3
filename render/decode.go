package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentmem/agentmem"
)

// DecodeOpenAIMessages decodes a JSON array of OpenAI chat-completions
// messages strictly. Every object may have only the fields the API
// defines, with field names matched exactly. Values must have the API's
// types, and each role's rules hold:
//
//   - role is "system" (or "developer", decoded as system), "user",
//     "assistant" or "tool";
//   - content is a string or an array of {"type":"text"} and (except in
//     system messages) {"type":"image_url"} parts; it is required except
//     on an assistant message with tool calls or a refusal. Images in
//     assistant and tool messages are agentmem's extension of the API
//     (a tool's screenshot), kept on the action and its result;
//   - tool_calls only on assistant messages, each with an id, type
//     "function" (or none) and a function name; tool_call_id, required, only
//     on tool messages;
//   - image URLs are http(s) or data: URLs, with detail "low", "high",
//     "auto" or none;
//   - the response-only assistant fields refusal (a string, kept as the
//     content when there is none), annotations (ignored), audio and
//     function_call (which must be null) are accepted so that a reply can
//     be sent back as it came.
//
// Empty text parts are dropped and empty content decodes as no parts. The
// order of messages is not checked, since a request may continue a history
// kept elsewhere; use Validate("openai", ...) for that. Errors wrap
// agentmem.ErrInvalid. An *agentmem.InvalidError's Field names the bad
// message by index, e.g. "messages[2].tool_calls[0].id".
func DecodeOpenAIMessages(data []byte) ([]agentmem.Message, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '[' {
		return nil, &agentmem.InvalidError{Field: "messages", Reason: "must be a JSON array of messages"}
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, &agentmem.InvalidError{Field: "messages", Reason: "is not valid JSON: " + err.Error()}
	}
	msgs := make([]agentmem.Message, 0, len(raws))
	for i, raw := range raws {
		m, err := decodeOpenAIMessage(raw)
		if err == nil {
			err = m.Validate()
		}
		if err != nil {
			return nil, atIndex(i, err)
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// atIndex prefixes an error's field with "messages[i]".
func atIndex(i int, err error) error {
	prefix := fmt.Sprintf("messages[%d]", i)
	var ie *agentmem.InvalidError
	if errors.As(err, &ie) {
		field := prefix
		if ie.Field != "" {
			field += "." + ie.Field
		}
		return &agentmem.InvalidError{Field: field, Reason: ie.Reason}
	}
	return &agentmem.InvalidError{Field: prefix, Reason: err.Error()}
}

func bad(field, format string, args ...any) error {
	return &agentmem.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// object decodes a JSON object into its fields, refusing any field not in
// allowed (matched exactly).
func object(raw json.RawMessage, field string, allowed ...string) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, bad(field, "must be a JSON object")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, bad(field, "is not a valid JSON object: %v", err)
	}
	for k := range fields {
		if !contains(allowed, k) {
			return nil, bad(join(field, k), "is an unknown field (allowed: %s)", strings.Join(allowed, ", "))
		}
	}
	return fields, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func join(parent, field string) string {
	if parent == "" {
		return field
	}
	return parent + "." + field
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// optString returns a string field; a missing or null field is "".
func optString(fields map[string]json.RawMessage, parent, key string) (string, error) {
	raw := fields[key]
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", bad(join(parent, key), "must be a string")
	}
	return s, nil
}

var messageFields = []string{"role", "content", "name", "tool_calls", "tool_call_id", "refusal", "annotations", "audio", "function_call"}

func decodeOpenAIMessage(raw json.RawMessage) (agentmem.Message, error) {
	var m agentmem.Message
	fields, err := object(raw, "", messageFields...)
	if err != nil {
		return m, err
	}
	role, err := optString(fields, "", "role")
	if err != nil {
		return m, err
	}
	switch role {
	case "system", "developer":
		m.Role = agentmem.RoleSystem
	case "user", "assistant", "tool":
		m.Role = agentmem.Role(role)
	case "":
		return m, bad("role", "is required")
	case "function":
		return m, bad("role", "the deprecated function role is not supported; send tool results as tool messages")
	default:
		return m, bad("role", "unknown role %q (want system, developer, user, assistant or tool)", role)
	}
	if m.Name, err = optString(fields, "", "name"); err != nil {
		return m, err
	}
	if err := checkResponseFields(fields, m.Role); err != nil {
		return m, err
	}
	hasContent := !isNull(fields["content"])
	if m.Content, err = decodeContent(fields["content"], m.Role); err != nil {
		return m, err
	}
	if m.ToolCalls, err = decodeToolCalls(fields["tool_calls"], m.Role); err != nil {
		return m, err
	}
	if m.ToolCallID, err = optString(fields, "", "tool_call_id"); err != nil {
		return m, err
	}
	switch {
	case m.ToolCallID != "" && m.Role != agentmem.RoleTool:
		return m, bad("tool_call_id", "is only allowed on a tool message")
	case m.ToolCallID == "" && m.Role == agentmem.RoleTool:
		return m, bad("tool_call_id", "is required on a tool message")
	}
	if m.Role == agentmem.RoleAssistant {
		refusal, err := optString(fields, "", "refusal")
		if err != nil {
			return m, err
		}
		if len(m.Content) == 0 && refusal != "" {
			m.Content, hasContent = agentmem.Text(refusal), true
		}
		if !hasContent && len(m.ToolCalls) == 0 {
			return m, bad("content", "is required on an assistant message without tool calls")
		}
	} else if !hasContent {
		return m, bad("content", "is required on a %s message", role)
	}
	return m, nil
}

// checkResponseFields checks the fields a chat completion's reply carries
// that a request may echo back.
func checkResponseFields(fields map[string]json.RawMessage, role agentmem.Role) error {
	for _, k := range []string{"refusal", "annotations", "audio", "function_call"} {
		raw, ok := fields[k]
		if !ok {
			continue
		}
		if role != agentmem.RoleAssistant {
			return bad(k, "is only allowed on an assistant message")
		}
		switch k {
		case "annotations":
			if t := bytes.TrimSpace(raw); !isNull(t) && t[0] != '[' {
				return bad(k, "must be an array")
			}
		case "audio", "function_call":
			if !isNull(raw) {
				return bad(k, "is not supported (must be null)")
			}
		}
	}
	return nil
}

// decodeContent decodes a message's content: null, a string or an array
// of parts.
func decodeContent(raw json.RawMessage, role agentmem.Role) (agentmem.Content, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case isNull(raw):
		return nil, nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, bad("content", "is not a valid string: %v", err)
		}
		if s == "" {
			return nil, nil
		}
		return agentmem.Text(s), nil
	case raw[0] != '[':
		return nil, bad("content", "must be a string, an array of parts or null")
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, bad("content", "is not a valid array: %v", err)
	}
	if len(raws) == 0 {
		return nil, bad("content", "is an empty array")
	}
	var out agentmem.Content
	for i, r := range raws {
		p, err := decodePart(r, fmt.Sprintf("content[%d]", i), role)
		if err != nil {
			return nil, err
		}
		if p.Type == agentmem.PartText && p.Text == "" {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

func decodePart(raw json.RawMessage, field string, role agentmem.Role) (agentmem.Part, error) {
	fields, err := object(raw, field, "type", "text", "image_url")
	if err != nil {
		return agentmem.Part{}, err
	}
	typ, err := optString(fields, field, "type")
	if err != nil {
		return agentmem.Part{}, err
	}
	switch typ {
	case "text":
		if _, ok := fields["image_url"]; ok {
			return agentmem.Part{}, bad(join(field, "image_url"), "is not allowed on a text part")
		}
		if _, ok := fields["text"]; !ok {
			return agentmem.Part{}, bad(join(field, "text"), "is required")
		}
		text, err := optString(fields, field, "text")
		return agentmem.TextPart(text), err
	case "image_url":
		if _, ok := fields["text"]; ok {
			return agentmem.Part{}, bad(join(field, "text"), "is not allowed on an image_url part")
		}
		if role == agentmem.RoleSystem {
			return agentmem.Part{}, bad(field, "images are allowed in user, assistant and tool messages, not in a system message")
		}
		return decodeImage(fields["image_url"], join(field, "image_url"))
	case "":
		return agentmem.Part{}, bad(join(field, "type"), "is required")
	}
	return agentmem.Part{}, bad(join(field, "type"), "unsupported content part type %q (want text or image_url)", typ)
}

func decodeImage(raw json.RawMessage, field string) (agentmem.Part, error) {
	if isNull(raw) {
		return agentmem.Part{}, bad(field, "is required")
	}
	fields, err := object(raw, field, "url", "detail")
	if err != nil {
		return agentmem.Part{}, err
	}
	u, err := optString(fields, field, "url")
	if err != nil {
		return agentmem.Part{}, err
	}
	lower := strings.ToLower(u)
	if !strings.HasPrefix(lower, "https://") && !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "data:") {
		return agentmem.Part{}, bad(join(field, "url"), "must be an http(s) or data: URL")
	}
	detail, err := optString(fields, field, "detail")
	if err != nil {
		return agentmem.Part{}, err
	}
	switch detail {
	case "", "auto", "low", "high":
	default:
		return agentmem.Part{}, bad(join(field, "detail"), "must be low, high or auto, not %q", detail)
	}
	return agentmem.ImagePart(agentmem.Image{URL: u, Detail: detail}), nil
}

func decodeToolCalls(raw json.RawMessage, role agentmem.Role) ([]agentmem.ToolCall, error) {
	if isNull(raw) {
		return nil, nil
	}
	if role != agentmem.RoleAssistant {
		return nil, bad("tool_calls", "are only allowed on an assistant message")
	}
	if t := bytes.TrimSpace(raw); t[0] != '[' {
		return nil, bad("tool_calls", "must be an array")
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, bad("tool_calls", "is not a valid array: %v", err)
	}
	var calls []agentmem.ToolCall
	for i, r := range raws {
		tc, err := decodeToolCall(r, fmt.Sprintf("tool_calls[%d]", i))
		if err != nil {
			return nil, err
		}
		calls = append(calls, tc)
	}
	return calls, nil
}

func decodeToolCall(raw json.RawMessage, field string) (agentmem.ToolCall, error) {
	var tc agentmem.ToolCall
	fields, err := object(raw, field, "id", "type", "function")
	if err != nil {
		return tc, err
	}
	if tc.ID, err = optString(fields, field, "id"); err != nil {
		return tc, err
	}
	if tc.ID == "" {
		return tc, bad(join(field, "id"), "is required")
	}
	typ, err := optString(fields, field, "type")
	if err != nil {
		return tc, err
	}
	if typ != "" && typ != "function" {
		return tc, bad(join(field, "type"), "unsupported tool call type %q (want function)", typ)
	}
	ff := join(field, "function")
	if isNull(fields["function"]) {
		return tc, bad(ff, "is required")
	}
	fn, err := object(fields["function"], ff, "name", "arguments")
	if err != nil {
		return tc, err
	}
	if tc.Name, err = optString(fn, ff, "name"); err != nil {
		return tc, err
	}
	if tc.Name == "" {
		return tc, bad(join(ff, "name"), "is required")
	}
	if tc.Arguments, err = optString(fn, ff, "arguments"); err != nil {
		return tc, err
	}
	return tc, nil
}
