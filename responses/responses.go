// Package responses converts between the input items of OpenAI's Responses
// API and agentmem's chat messages and steps. The OpenAI Agents SDK's
// sessions store such items. This package is the one place where items
// become messages and steps become items again. The HTTP API's items
// routes use it, and so do the Python and TypeScript AgentmemSession over
// them.
//
// An item becomes one chat message, folded into a step as every message is
// (agentmem.FoldMessages):
//
//   - a message item ({"role","content"} or {"type":"message",...}, with
//     input_text, output_text, refusal, input_image and other content
//     parts): a user, assistant or system message (developer is system),
//     whose text is the text of its parts, so it renders in contexts and
//     recall indexes it; a user or assistant message keeps its image URLs
//     as images;
//   - function_call: an assistant message with that one tool call, an
//     action that is pending until its output arrives;
//   - function_call_output: the tool result of its call, in the same
//     request or any later one, with the images of its input_image parts
//     (a screenshot tool's: agentmem.ToolResult.Images);
//   - any other item (reasoning, web_search_call, file_search_call,
//     computer_call and its output, image_generation_call, mcp_*,
//     custom_tool_call, item_reference, types to come...): an assistant
//     message with nothing to say, an action that renders no chat turn.
//
// Every item keeps its exact JSON under MetaItem, compacted: the same
// members and values, in the same order. The JSON is in the metadata of
// its step or, for an output, of its tool result
// (agentmem.ToolResult.Metadata). So Items gives back what was stored,
// whatever the item type. The JSON survives amendments, pops and
// compactions that keep the step; a truncated result still gives back the
// whole output.
//
// An output also records where it goes in the session's order of items
// (MetaAfter). Steps keep their order in the working set, but an output
// completes the action of its call, wherever that is. It may arrive after
// other items.
//
// Steps written otherwise come back as the items they render: role and
// content messages, function_call and function_call_output items. Such
// steps come from the messages and steps routes, or are a summary that
// replaced items.
package responses

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem"
)

// Metadata keys this package reserves.
const (
	// MetaItem holds an item's JSON, on the step it became or, for a
	// function_call_output, on its call's tool result.
	MetaItem = "responses.item"
	// MetaAfter holds, on an output's tool result, where the output goes in
	// the order of items, as "W:I:ID". The output goes after the step with
	// ID ID, the step before it when it was stored. Among the outputs placed
	// there, it goes after those with a smaller W, or an equal W and a
	// smaller I (see ToMessages).
	MetaAfter = "responses.after"
)

// Item types with a chat equivalent.
const (
	TypeMessage            = "message"
	TypeFunctionCall       = "function_call"
	TypeFunctionCallOutput = "function_call_output"
	// TypeFunctionCallResult is the output item of the OpenAI Agents SDK for
	// JavaScript (@openai/agents-core). Like its function_call items, it
	// names the call callId. Its output is a string, one part
	// ({"type":"text","text":...}) or an array of parts.
	TypeFunctionCallResult = "function_call_result"
)

// Options give ToMessages what it needs to know about the session.
type Options struct {
	// NewID gives the ID of each message that becomes a step (every item but
	// an output), in order. These are the step IDs the append will store; an
	// output after one of them names it (MetaAfter). Required.
	NewID func() string
	// Newest is the ID of the newest step of the session's working set, and
	// LastSeq is the session's LastSeq. Both are read before the append,
	// which is conditional on LastSeq (see NeedsState). An output that comes
	// before every other item of the request goes after that step.
	Newest  string
	LastSeq int64
}

// NeedsState reports whether items begin with an output, placed after the
// newest step of the session. ToMessages then needs Options.Newest and
// Options.LastSeq, read from the working set the append is conditional on.
// The items must have been checked (Check).
func NeedsState(items []json.RawMessage) bool {
	return len(items) > 0 && isOutput(typeOf(items[0]))
}

// isOutput reports whether an item type is a function call's output.
func isOutput(typ string) bool {
	return typ == TypeFunctionCallOutput || typ == TypeFunctionCallResult
}

// Check checks items without converting them: each must be a valid item
// (see ToMessages). Errors are *agentmem.InvalidError naming the item, as
// "items[i].field".
func Check(items []json.RawMessage) error {
	for i, raw := range items {
		if _, err := decode(raw); err != nil {
			return at(i, err)
		}
	}
	return nil
}

// ToMessages converts items to chat messages, one each, for
// sessions.Service.AppendMessages (or agentmem.FoldMessages with
// KeepPending). Each message carries its item's JSON (MetaItem). An output
// carries its place too (MetaAfter): after the step item before it in the
// request or, when it comes first, after opts.Newest with W =
// opts.LastSeq.
//
// Outputs placed after a step of their own request have W = 0. A retry of
// the request (same Idempotency-Key, hence the same step IDs) gives the
// same places again, so it stores nothing. An output placed after a step
// of an earlier request answers an earlier call. A retry repeats its
// result, which stores nothing either.
//
// An item is a JSON object. A bad item is refused with an
// *agentmem.InvalidError naming it ("items[i].call_id"). Items are bad
// when they have:
//
//   - a type that is not a non-empty string;
//   - neither type nor role;
//   - for a message, an unknown role, or content that is not a string or
//     an array of objects with a type;
//   - for a function_call, no call_id, name or string arguments;
//   - for a function_call_output, no call_id, or an output that is not a
//     string or an array of parts.
//
// The JavaScript Agents SDK's forms are taken too: callId for call_id, and
// its output item function_call_result, whose output may also be one part.
func ToMessages(items []json.RawMessage, opts Options) ([]agentmem.Message, error) {
	if opts.NewID == nil {
		return nil, &agentmem.InvalidError{Field: "options.new_id", Reason: "is required"}
	}
	msgs := make([]agentmem.Message, len(items))
	after, w := opts.Newest, opts.LastSeq
	for i, raw := range items {
		m, err := decode(raw)
		if err != nil {
			return nil, at(i, err)
		}
		if m.Role == agentmem.RoleTool {
			if after == "" {
				return nil, at(i, &agentmem.InvalidError{Field: "call_id", Reason: fmt.Sprintf("output for %q has no function_call with that call_id", m.ToolCallID)})
			}
			m.Metadata[MetaAfter] = strconv.FormatInt(w, 10) + ":" + strconv.Itoa(i) + ":" + after
		} else {
			m.ID = opts.NewID()
			after, w = m.ID, 0
		}
		msgs[i] = m
	}
	return msgs, nil
}

// at puts "items[i]" before the field of an error about item i.
func at(i int, err error) error {
	prefix := "items[" + strconv.Itoa(i) + "]"
	if ie, ok := err.(*agentmem.InvalidError); ok {
		f := prefix
		if ie.Field != "" {
			f += "." + ie.Field
		}
		return &agentmem.InvalidError{Field: f, Reason: ie.Reason}
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

func invalid(field, format string, args ...any) error {
	return &agentmem.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// typeOf returns the type of an item that Check accepted: its "type", or
// "message" for a short message ({"role","content"}).
func typeOf(raw json.RawMessage) string {
	var probe struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &probe)
	if probe.Type == "" {
		return TypeMessage
	}
	return probe.Type
}

// decode converts one item to its chat message, with the item's JSON in
// its metadata.
func decode(raw json.RawMessage) (agentmem.Message, error) {
	var fields map[string]json.RawMessage
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &fields) != nil {
		return agentmem.Message{}, invalid("", "must be a JSON object (a Responses API input item)")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, trimmed); err != nil {
		return agentmem.Message{}, invalid("", "is not valid JSON: %v", err)
	}
	typ := TypeMessage
	if t, ok := fields["type"]; ok {
		if err := json.Unmarshal(t, &typ); err != nil || typ == "" {
			return agentmem.Message{}, invalid("type", "must be a non-empty string")
		}
	} else if _, ok := fields["role"]; !ok {
		return agentmem.Message{}, invalid("type", "is required (or a role, for a message)")
	}
	var m agentmem.Message
	var err error
	switch typ {
	case TypeMessage:
		m, err = decodeMessage(fields)
	case TypeFunctionCall:
		m, err = decodeCall(fields)
	case TypeFunctionCallOutput, TypeFunctionCallResult:
		m, err = decodeOutput(fields)
	default:
		// No chat equivalent: an action with nothing to render.
		m = agentmem.Message{Role: agentmem.RoleAssistant}
	}
	if err != nil {
		return agentmem.Message{}, err
	}
	m.Metadata = map[string]string{MetaItem: compact.String()}
	return m, nil
}

// str decodes a required string member.
func str(fields map[string]json.RawMessage, name string, nonEmpty bool) (string, error) {
	raw, ok := fields[name]
	if !ok {
		return "", invalid(name, "is required")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", invalid(name, "must be a string")
	}
	if nonEmpty && s == "" {
		return "", invalid(name, "must not be empty")
	}
	return s, nil
}

func decodeMessage(fields map[string]json.RawMessage) (agentmem.Message, error) {
	role, err := str(fields, "role", true)
	if err != nil {
		return agentmem.Message{}, err
	}
	m := agentmem.Message{}
	switch role {
	case "user":
		m.Role = agentmem.RoleUser
	case "assistant":
		m.Role = agentmem.RoleAssistant
	case "system", "developer":
		m.Role = agentmem.RoleSystem
	default:
		return agentmem.Message{}, invalid("role", "must be user, assistant, system or developer, not %q", role)
	}
	raw, ok := fields["content"]
	if !ok {
		return agentmem.Message{}, invalid("content", "is required")
	}
	text, images, err := contentText(raw, "content")
	if err != nil {
		return agentmem.Message{}, err
	}
	if text != "" || len(images) == 0 {
		m.Content = agentmem.Text(text)
	}
	if m.Role != agentmem.RoleSystem {
		for _, img := range images {
			m.Content = append(m.Content, agentmem.ImagePart(img))
		}
	}
	return m, nil
}

// callID returns the call ID of a function_call or its output. That is
// call_id, as the Responses API and the Python Agents SDK have it, or
// callId, as the JavaScript Agents SDK stores its items.
func callID(fields map[string]json.RawMessage) (string, error) {
	if _, ok := fields["call_id"]; !ok {
		if _, ok := fields["callId"]; ok {
			return str(fields, "callId", true)
		}
	}
	return str(fields, "call_id", true)
}

func decodeCall(fields map[string]json.RawMessage) (agentmem.Message, error) {
	id, err := callID(fields)
	if err != nil {
		return agentmem.Message{}, err
	}
	name, err := str(fields, "name", true)
	if err != nil {
		return agentmem.Message{}, err
	}
	args, err := str(fields, "arguments", false)
	if err != nil {
		return agentmem.Message{}, err
	}
	return agentmem.Message{Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{{ID: id, Name: name, Arguments: args}}}, nil
}

func decodeOutput(fields map[string]json.RawMessage) (agentmem.Message, error) {
	id, err := callID(fields)
	if err != nil {
		return agentmem.Message{}, err
	}
	raw, ok := fields["output"]
	if !ok {
		return agentmem.Message{}, invalid("output", "is required")
	}
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
		// One part, as the JavaScript Agents SDK writes a text output.
		raw = append(append(json.RawMessage{'['}, t...), ']')
	}
	text, images, err := contentText(raw, "output")
	if err != nil {
		return agentmem.Message{}, err
	}
	m := agentmem.Message{Role: agentmem.RoleTool, ToolCallID: id, Content: agentmem.Text(text)}
	for _, img := range images {
		m.Content = append(m.Content, agentmem.ImagePart(img))
	}
	return m, nil
}

// contentText returns the text of a message's content or an output, and
// the images it has. The text is a string, or the text of an array of
// parts: input_text, output_text and refusal parts, joined by newlines.
// The images are input_image parts with an image_url, and the JavaScript
// Agents SDK's image parts whose image is a URL.
func contentText(raw json.RawMessage, field string) (string, []agentmem.Image, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil, nil
	}
	var parts []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, invalid(field, "must be a string or an array of content parts")
	}
	var texts []string
	var images []agentmem.Image
	for i, p := range parts {
		f := field + "[" + strconv.Itoa(i) + "]"
		if p == nil {
			return "", nil, invalid(f, "must be an object")
		}
		typ, err := str(p, "type", true)
		if err != nil {
			return "", nil, invalid(f+".type", "must be a non-empty string")
		}
		member := ""
		switch typ {
		case "input_text", "output_text", "text", "summary_text", "reasoning_text":
			member = "text"
		case "refusal":
			member = "refusal"
		case "input_image":
			if _, ok := p["image_url"]; !ok {
				continue
			}
			url, err := str(p, "image_url", false)
			if err != nil {
				var null any
				if json.Unmarshal(p["image_url"], &null) == nil && null == nil {
					continue
				}
				return "", nil, invalid(f+".image_url", "must be a string")
			}
			if url == "" {
				continue
			}
			img := agentmem.Image{URL: url}
			if d, ok := p["detail"]; ok {
				_ = json.Unmarshal(d, &img.Detail)
			}
			images = append(images, img)
			continue
		case "image":
			// The JavaScript SDK's image output: its image is a URL, or
			// an object (inline data, a file) that stays in the item only.
			var url string
			if json.Unmarshal(p["image"], &url) == nil && url != "" {
				images = append(images, agentmem.Image{URL: url})
			}
			continue
		default:
			continue // a file, audio...: not text
		}
		t, err := str(p, member, false)
		if err != nil {
			return "", nil, invalid(f+"."+member, "must be a string")
		}
		texts = append(texts, t)
	}
	return strings.Join(texts, "\n"), images, nil
}

// entry is one item of a working set, with where it comes from.
type entry struct {
	step   int    // index of the step in the working set
	callID string // the call whose result the item is, if it is one
	item   json.RawMessage
	// place orders results: after the step at index anchor, by (w, i).
	anchor int
	w      int64
	i      int
}

// Items returns the items of a working set (a session's steps, oldest
// first), in the order they were stored. Each step's own items come in
// order, and each output comes after the item it was stored after. Pending
// actions are included: their function_call items are there before their
// outputs arrive.
func Items(steps []agentmem.Step) []json.RawMessage {
	entries := order(steps)
	out := make([]json.RawMessage, len(entries))
	for i, e := range entries {
		out[i] = e.item
	}
	return out
}

// Newest returns the newest item of a working set (the last of Items),
// with what a pop takes out to remove it (sessions.PopRequest.Target).
// That is the index of its step and, for an output, the ID of its call. ok
// is false when the working set has no items.
func Newest(steps []agentmem.Step) (item json.RawMessage, index int, callID string, ok bool) {
	entries := order(steps)
	if len(entries) == 0 {
		return nil, 0, "", false
	}
	e := entries[len(entries)-1]
	return e.item, e.step, e.callID, true
}

// order lists a working set's items in order.
func order(steps []agentmem.Step) []entry {
	byID := make(map[string]int, len(steps))
	for i, s := range steps {
		if id := s.Info().ID; id != "" {
			byID[id] = i
		}
	}
	var own [][]entry
	var results []entry
	for i, s := range steps {
		var mine []entry
		a, isAction := s.(*agentmem.ActionStep)
		if raw, ok := s.Info().Metadata[MetaItem]; ok {
			mine = append(mine, entry{step: i, item: json.RawMessage(raw)})
		} else {
			rendered := s
			if isAction && len(a.Results) > 0 {
				c := agentmem.CloneStep(a).(*agentmem.ActionStep)
				c.Results = nil
				rendered = c
			}
			msgs := rendered.Messages(agentmem.RenderOptions{})
			if len(msgs) == 0 {
				// A step that renders nothing (a final answer, an empty
				// action) is still an item: the message a pop gives.
				m, _ := agentmem.PopMessage(rendered)
				msgs = []agentmem.Message{m}
			}
			for _, m := range msgs {
				for _, it := range fromMessage(m) {
					mine = append(mine, entry{step: i, item: it})
				}
			}
		}
		own = append(own, mine)
		if !isAction {
			continue
		}
		for k, r := range a.Results {
			e := entry{step: i, callID: r.CallID, anchor: i, w: -1, i: k}
			raw, ok := r.Metadata[MetaItem]
			if !ok {
				m, _, _ := a.PopResult(r.CallID)
				e.item = fromMessage(m)[0]
				results = append(results, e)
				continue
			}
			e.item = json.RawMessage(raw)
			if w, idx, id, ok := parseAfter(r.Metadata[MetaAfter]); ok {
				if n, found := byID[id]; found && n >= i {
					e.anchor, e.w, e.i = n, w, idx
				} else {
					e.w, e.i = 0, idx
				}
			}
			results = append(results, e)
		}
	}
	slices.SortStableFunc(results, func(x, y entry) int {
		return cmp.Or(cmp.Compare(x.anchor, y.anchor), cmp.Compare(x.w, y.w), cmp.Compare(x.i, y.i))
	})
	out := make([]entry, 0, len(steps)+len(results))
	r := 0
	for i := range steps {
		out = append(out, own[i]...)
		for ; r < len(results) && results[r].anchor == i; r++ {
			out = append(out, results[r])
		}
	}
	return out
}

// parseAfter parses a MetaAfter value.
func parseAfter(v string) (w int64, i int, id string, ok bool) {
	ws, rest, ok1 := strings.Cut(v, ":")
	is, id, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 {
		return 0, 0, "", false
	}
	w, err1 := strconv.ParseInt(ws, 10, 64)
	i, err2 := strconv.Atoi(is)
	return w, i, id, err1 == nil && err2 == nil
}

// fromMessage returns the items a chat message stands for. These are a
// role and content message, the function_call items of an assistant's tool
// calls, or a function_call_output for a tool message.
func fromMessage(m agentmem.Message) []json.RawMessage {
	enc := func(v any) json.RawMessage {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		_ = e.Encode(v) // maps of strings and slices: always encodes
		return json.RawMessage(bytes.TrimRight(b.Bytes(), "\n"))
	}
	switch m.Role {
	case agentmem.RoleTool:
		var output any = m.Text()
		if parts := inputParts(m.Content); hasImage(m.Content) {
			output = parts
		}
		return []json.RawMessage{enc(map[string]any{"type": TypeFunctionCallOutput, "call_id": m.ToolCallID, "output": output})}
	case agentmem.RoleAssistant, agentmem.RoleAgentResponse:
		// An assistant message's content is output text: its images are
		// described in it.
		m = agentmem.DescribeImages(m)
		var out []json.RawMessage
		if text := m.Text(); text != "" || len(m.ToolCalls) == 0 {
			out = append(out, enc(map[string]any{"role": "assistant", "content": text}))
		}
		for _, c := range m.ToolCalls {
			out = append(out, enc(map[string]any{"type": TypeFunctionCall, "call_id": c.ID, "name": c.Name, "arguments": c.Arguments}))
		}
		return out
	case agentmem.RoleSystem:
		return []json.RawMessage{enc(map[string]any{"role": "system", "content": m.Text()})}
	}
	// user, agent_call
	if !hasImage(m.Content) {
		return []json.RawMessage{enc(map[string]any{"role": "user", "content": m.Text()})}
	}
	return []json.RawMessage{enc(map[string]any{"role": "user", "content": inputParts(m.Content)})}
}

// hasImage reports whether content has an image part.
func hasImage(c agentmem.Content) bool {
	return slices.ContainsFunc(c, func(p agentmem.Part) bool { return p.Type == agentmem.PartImage && p.Image != nil })
}

// inputParts writes content as input parts: its text, then its images
// (inline data as a data: URL).
func inputParts(c agentmem.Content) []map[string]any {
	var text []string
	var parts []map[string]any
	for _, p := range c {
		if p.Type == agentmem.PartImage && p.Image != nil {
			parts = append(parts, map[string]any{"type": "input_image", "image_url": imageURL(*p.Image), "detail": cmp.Or(p.Image.Detail, "auto")})
		} else if p.Text != "" {
			text = append(text, p.Text)
		}
	}
	if len(text) > 0 {
		parts = append([]map[string]any{{"type": "input_text", "text": strings.Join(text, "\n")}}, parts...)
	}
	return parts
}

// imageURL returns an image's URL, or a data: URL of its inline bytes.
func imageURL(img agentmem.Image) string {
	if img.URL != "" {
		return img.URL
	}
	return "data:" + cmp.Or(img.MediaType, "application/octet-stream") + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
}
