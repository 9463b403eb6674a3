package proxy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
)

// anthropic is Anthropic's Messages API.
type anthropic struct{}

func (anthropic) name() string                { return render.NameAnthropic }
func (anthropic) upstream(c *Config) Upstream { return c.Anthropic }
func (anthropic) path() string                { return "/v1/messages" }
func (anthropic) route() string               { return "/v1/messages" }
func (anthropic) flag() string                { return "--anthropic-base-url" }
func (anthropic) stream(bu *budget) accumulator {
	return &anthropicStream{bu: bu, blocks: map[int]*anthropicStreamBlock{}}
}
func (anthropic) outputTokens(body map[string]json.RawMessage) int {
	var n int
	if json.Unmarshal(body["max_tokens"], &n) == nil && n > 0 {
		return n
	}
	return DefaultOutputTokens
}

// anthropicBlockIn is a content block of a request (or of an answer).
// cache_control and citations are accepted and dropped: the messages sent
// are the session's context, rendered anew.
type anthropicBlockIn struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Source *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// blocks decodes a content value: a string or an array of blocks.
func blocks(raw json.RawMessage, field string) ([]anthropicBlockIn, error) {
	t := bytes.TrimSpace(raw)
	if len(t) > 0 && t[0] == '"' {
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return nil, invalid(field, "is not a valid string")
		}
		return []anthropicBlockIn{{Type: "text", Text: s}}, nil
	}
	var out []anthropicBlockIn
	if err := json.Unmarshal(t, &out); err != nil || len(t) == 0 || t[0] != '[' {
		return nil, invalid(field, "must be a string or an array of content blocks")
	}
	return out, nil
}

// DecodeAnthropicRequest decodes the system prompt and messages of an
// Anthropic Messages API request body into canonical messages, as the
// proxy records them:
//
//   - the system prompt (a string or text blocks) is a system message;
//   - a user message's tool_result blocks (text content) become tool
//     messages, followed by a user message with its text and image
//     blocks;
//   - an assistant message's text and tool_use blocks become one
//     assistant message with tool calls (the input as compact JSON text).
//
// cache_control and citations are dropped; other blocks (thinking,
// documents) are refused. Errors are *Error (400) naming the field, such
// as "messages[2].content[0].tool_use_id".
func DecodeAnthropicRequest(body []byte) ([]agentmem.Message, error) {
	fields, _, err := decodeBody(body)
	if err != nil {
		return nil, err
	}
	return anthropic{}.decode(fields)
}

func (anthropic) decode(body map[string]json.RawMessage) ([]agentmem.Message, error) {
	var out []agentmem.Message
	if raw, ok := body["system"]; ok && !isNull(raw) {
		bs, err := blocks(raw, "system")
		if err != nil {
			return nil, err
		}
		var texts []string
		for i, b := range bs {
			if b.Type != "text" {
				return nil, invalid(fmt.Sprintf("system[%d].type", i), "must be text, not %q", b.Type)
			}
			texts = append(texts, b.Text)
		}
		if text := strings.Join(texts, "\n"); text != "" {
			out = append(out, agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text(text)})
		}
	}
	raw, ok := body["messages"]
	if !ok || isNull(raw) {
		return nil, invalid("messages", "is required")
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, invalid("messages", "must be an array of messages")
	}
	if len(raws) == 0 {
		return nil, invalid("messages", "is empty")
	}
	msgs, err := anthropic{}.decodeMessages(raws)
	if err != nil {
		return nil, err
	}
	out = append(out, msgs...)
	if len(out) == 0 {
		return nil, invalid("messages", "hold no content: every message is empty")
	}
	return out, nil
}

func (anthropic) systemMember() bool { return true }

func (anthropic) decodeMessages(raws []json.RawMessage) ([]agentmem.Message, error) {
	var out []agentmem.Message
	for i, r := range raws {
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(r, &m); err != nil {
			return nil, invalid(fmt.Sprintf("messages[%d]", i), "must be a message object")
		}
		field := fmt.Sprintf("messages[%d]", i)
		bs, err := blocks(m.Content, field+".content")
		if err != nil {
			return nil, err
		}
		var add []agentmem.Message
		switch m.Role {
		case "user":
			add, err = userMessages(bs, field)
		case "assistant":
			add, err = assistantMessages(bs, field)
		default:
			return nil, invalid(field+".role", "must be user or assistant, not %q", m.Role)
		}
		if err != nil {
			return nil, err
		}
		for _, a := range add {
			if err := a.Validate(); err != nil {
				return nil, invalid(field, "%v", err)
			}
		}
		out = append(out, add...)
	}
	return out, nil
}

// userMessages converts a user message: its tool results become tool
// messages, followed by a user message with the rest.
func userMessages(bs []anthropicBlockIn, field string) ([]agentmem.Message, error) {
	var out []agentmem.Message
	var parts agentmem.Content
	for j, b := range bs {
		f := fmt.Sprintf("%s.content[%d]", field, j)
		switch b.Type {
		case "text":
			if b.Text != "" {
				parts = append(parts, agentmem.TextPart(b.Text))
			}
		case "image":
			img, err := anthropicImage(b, f)
			if err != nil {
				return nil, err
			}
			parts = append(parts, agentmem.ImagePart(img))
		case "tool_result":
			if b.ToolUseID == "" {
				return nil, invalid(f+".tool_use_id", "is required")
			}
			content, err := resultContent(b.Content, f+".content")
			if err != nil {
				return nil, err
			}
			m := agentmem.Message{Role: agentmem.RoleTool, ToolCallID: b.ToolUseID, Content: content}
			if b.IsError {
				m.Metadata = map[string]string{agentmem.MetaIsError: "true"}
			}
			out = append(out, m)
		default:
			return nil, invalid(f+".type", "the proxy does not support %q blocks in a user message (text, image and tool_result)", b.Type)
		}
	}
	if len(parts) > 0 {
		out = append(out, agentmem.Message{Role: agentmem.RoleUser, Content: parts})
	}
	return out, nil
}

// assistantMessages converts an assistant message.
func assistantMessages(bs []anthropicBlockIn, field string) ([]agentmem.Message, error) {
	var texts []string
	var calls []agentmem.ToolCall
	for j, b := range bs {
		f := fmt.Sprintf("%s.content[%d]", field, j)
		switch b.Type {
		case "text":
			if b.Text != "" {
				texts = append(texts, b.Text)
			}
		case "tool_use":
			if b.ID == "" || b.Name == "" {
				return nil, invalid(f, "a tool_use block needs an id and a name")
			}
			calls = append(calls, agentmem.ToolCall{ID: b.ID, Name: b.Name, Arguments: compactJSON(b.Input)})
		default:
			return nil, invalid(f+".type", "the proxy does not support %q blocks in an assistant message (text and tool_use)", b.Type)
		}
	}
	if len(texts) == 0 && len(calls) == 0 {
		return nil, nil
	}
	m := agentmem.Message{Role: agentmem.RoleAssistant, ToolCalls: calls}
	if len(texts) > 0 {
		m.Content = agentmem.Text(strings.Join(texts, "\n"))
	}
	return []agentmem.Message{m}, nil
}

// compactJSON returns a tool_use input as compact JSON text ("{}" when
// there is none).
func compactJSON(raw json.RawMessage) string {
	if isNull(raw) {
		return "{}"
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// resultContent returns a tool result's content as a tool message's. That
// is its text (a string, or its text blocks joined by newlines), then its
// images (a screenshot tool's), which the result keeps
// (ToolResult.Images).
func resultContent(raw json.RawMessage, field string) (agentmem.Content, error) {
	if isNull(raw) {
		return agentmem.Text(""), nil
	}
	bs, err := blocks(raw, field)
	if err != nil {
		return nil, err
	}
	var texts []string
	var imgs agentmem.Content
	for j, b := range bs {
		f := fmt.Sprintf("%s[%d]", field, j)
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "image":
			img, err := anthropicImage(b, f)
			if err != nil {
				return nil, err
			}
			imgs = append(imgs, agentmem.ImagePart(img))
		default:
			return nil, invalid(f+".type", "the proxy supports text and image blocks in a tool result, not %q", b.Type)
		}
	}
	return append(agentmem.Text(strings.Join(texts, "\n")), imgs...), nil
}

// anthropicImage decodes an image block.
func anthropicImage(b anthropicBlockIn, field string) (agentmem.Image, error) {
	s := b.Source
	switch {
	case s == nil:
		return agentmem.Image{}, invalid(field+".source", "is required")
	case s.Type == "base64":
		data, err := base64.StdEncoding.DecodeString(s.Data)
		if err != nil || len(data) == 0 {
			return agentmem.Image{}, invalid(field+".source.data", "must be base64 image data")
		}
		return agentmem.Image{MediaType: s.MediaType, Data: data}, nil
	case s.Type == "url" && (strings.HasPrefix(s.URL, "https://") || strings.HasPrefix(s.URL, "http://")):
		return agentmem.Image{URL: s.URL}, nil
	}
	return agentmem.Image{}, invalid(field+".source", "must be a base64 or an http(s) url source")
}

func (anthropic) encode(body map[string]json.RawMessage, msgs []agentmem.Message) error {
	req := render.AnthropicRequest(msgs)
	b, err := json.Marshal(req.Messages)
	if err != nil {
		return err
	}
	body["messages"] = b
	delete(body, "system")
	if req.System != "" {
		if body["system"], err = json.Marshal(req.System); err != nil {
			return err
		}
	}
	return nil
}

// credentials: the configured key wins (x-api-key); otherwise the
// caller's x-api-key is forwarded, and its Authorization unless it was an
// agentmem API key.
func (anthropic) credentials(out, in *http.Request, key string) {
	if key != "" {
		out.Header.Set("X-Api-Key", key)
		return
	}
	if k := in.Header.Get("X-Api-Key"); k != "" {
		out.Header.Set("X-Api-Key", k)
	}
	if a := in.Header.Get("Authorization"); a != "" && !agentmemKey(in) {
		out.Header.Set("Authorization", a)
	}
}

// reply returns the assistant message of a whole answer.
func (anthropic) reply(body []byte) (agentmem.Message, bool) {
	var resp struct {
		Content []anthropicBlockIn `json:"content"`
	}
	if json.Unmarshal(body, &resp) != nil {
		return agentmem.Message{}, false
	}
	return anthropicReply(resp.Content)
}

// anthropicReply is the message of an answer's text and tool_use blocks
// (others, such as thinking, are not recorded).
func anthropicReply(bs []anthropicBlockIn) (agentmem.Message, bool) {
	var texts []string
	var calls []agentmem.ToolCall
	for _, b := range bs {
		switch b.Type {
		case "text":
			if b.Text != "" {
				texts = append(texts, b.Text)
			}
		case "tool_use":
			calls = append(calls, agentmem.ToolCall{ID: b.ID, Name: b.Name, Arguments: compactJSON(b.Input)})
		}
	}
	return assistantMessage(strings.Join(texts, "\n"), calls)
}

// anthropicStream accumulates a streamed message, as much of it as its
// budget holds.
type anthropicStream struct {
	bu      *budget
	blocks  map[int]*anthropicStreamBlock
	stopped bool // message_stop arrived
	failed  bool // an error event arrived
}

type anthropicStreamBlock struct {
	block      anthropicBlockIn
	text, json []byte
	done       bool
}

func (s *anthropicStream) event(name string, data []byte) bool {
	var ev struct {
		Type         string           `json:"type"`
		Index        int              `json:"index"`
		ContentBlock anthropicBlockIn `json:"content_block"`
		Delta        struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			PartialJSON string `json:"partial_json"`
		} `json:"delta"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return false
	}
	if name == "" {
		name = ev.Type
	}
	switch name {
	case "content_block_start":
		cb := ev.ContentBlock
		if _, ok := s.blocks[ev.Index]; ok || !s.bu.short(cb.Type, cb.ID, cb.Name) {
			return false
		}
		// Only what a reply records is kept of the block (not its
		// source or content, which a reply's blocks do not carry).
		b := &anthropicStreamBlock{block: anthropicBlockIn{Type: cb.Type, ID: cb.ID, Name: cb.Name}}
		b.text = s.bu.add(b.text, cb.Text)
		if cb.Type == "tool_use" && len(cb.Input) > 0 && len(cb.Input) <= shortString {
			b.block.Input = cb.Input
		}
		s.blocks[ev.Index] = b
	case "content_block_delta":
		if b := s.blocks[ev.Index]; b != nil {
			switch ev.Delta.Type {
			case "text_delta":
				b.text = s.bu.add(b.text, ev.Delta.Text)
			case "input_json_delta":
				b.json = s.bu.add(b.json, ev.Delta.PartialJSON)
			}
		}
	case "content_block_stop":
		if b := s.blocks[ev.Index]; b != nil {
			b.done = true
		}
	case "error":
		s.failed = true
	case "message_stop":
		s.stopped = true
		return true
	}
	return false
}

func (s *anthropicStream) missed()         { s.bu.miss() }
func (s *anthropicStream) truncated() bool { return s.bu.cut }
func (s *anthropicStream) held() int       { return s.bu.held() }

func (s *anthropicStream) reply(bool) (agentmem.Message, bool) {
	if !s.stopped || s.failed {
		return agentmem.Message{}, false
	}
	idx := make([]int, 0, len(s.blocks))
	for i := range s.blocks {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var bs []anthropicBlockIn
	for _, i := range idx {
		b := s.blocks[i]
		if !b.done {
			return agentmem.Message{}, false
		}
		out := b.block
		out.Text = string(b.text)
		if len(b.json) > 0 {
			out.Input = json.RawMessage(b.json)
		}
		bs = append(bs, out)
	}
	return anthropicReply(bs)
}
