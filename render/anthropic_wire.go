package render

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/agentmem/agentmem"
)

// AnthropicBody is the system prompt and messages of an Anthropic Messages
// API request body, in the API's exact JSON shape. The caller adds the
// model, max_tokens and the other parameters. (It is not named
// AnthropicRequest because the function that builds it is.)
type AnthropicBody struct {
	// System is the system prompt; empty means none.
	System   string             `json:"system,omitempty"`
	Messages []AnthropicMessage `json:"messages"`
}

// AnthropicMessage is one message: role "user" or "assistant" and its
// content blocks.
type AnthropicMessage struct {
	Role    string           `json:"role"`
	Content []AnthropicBlock `json:"content"`
}

// AnthropicBlock is one content block. Type selects which fields are set
// and encoded:
//
//	{"type":"text","text":...}
//	{"type":"image","source":{...}}
//	{"type":"tool_use","id":...,"name":...,"input":{...}}
//	{"type":"tool_result","tool_use_id":...,"content":...,"is_error":...}
//
// A tool_result's content is its text, or, when the result has images,
// its blocks: the text (when not empty) and the image blocks.
type AnthropicBlock struct {
	Type string
	// Text is the text of a text block.
	Text string
	// Source is the image of an image block.
	Source *AnthropicImageSource
	// ID, Name and Input are a tool_use block's call: Input is a JSON object.
	ID    string
	Name  string
	Input json.RawMessage
	// ToolUseID, Content and IsError are a tool_result block's answer;
	// Blocks, when set, is its content instead of Content: a text block
	// and image blocks.
	ToolUseID string
	Content   string
	IsError   bool
	Blocks    []AnthropicBlock
}

// AnthropicImageSource is an image given by URL ({"type":"url","url":...})
// or inline ({"type":"base64","media_type":...,"data":...}).
type AnthropicImageSource struct {
	Type      string `json:"type"`
	URL       string `json:"url,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"` // base64
}

// MarshalJSON encodes exactly the fields of the block's type.
func (b AnthropicBlock) MarshalJSON() ([]byte, error) {
	switch b.Type {
	case "text":
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{b.Type, b.Text})
	case "image":
		return json.Marshal(struct {
			Type   string                `json:"type"`
			Source *AnthropicImageSource `json:"source"`
		}{b.Type, b.Source})
	case "tool_use":
		input := b.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		return json.Marshal(struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}{b.Type, b.ID, b.Name, input})
	case "tool_result":
		if len(b.Blocks) > 0 {
			return json.Marshal(struct {
				Type      string           `json:"type"`
				ToolUseID string           `json:"tool_use_id"`
				Content   []AnthropicBlock `json:"content"`
				IsError   bool             `json:"is_error"`
			}{b.Type, b.ToolUseID, b.Blocks, b.IsError})
		}
		return json.Marshal(struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
			Content   string `json:"content,omitempty"`
			IsError   bool   `json:"is_error"`
		}{b.Type, b.ToolUseID, b.Content, b.IsError})
	}
	type plain AnthropicBlock // an unknown type: every field, for debugging
	return json.Marshal(plain(b))
}

// AnthropicRequest encodes messages as an Anthropic Messages API request.
// It accepts messages of any format of this package. Messages that are not
// yet in Anthropic's shape (canonical OpenAI messages, for example those
// DecodeOpenAIMessages returns) are converted and assembled as the
// Anthropic format does. So the request keeps the API's rules. The system
// messages' text parts become System, joined by blank lines. A tool_use
// block's input is the call's arguments when they are a JSON object, {}
// when they are empty, and {"_raw": ARGUMENTS} otherwise. Images become
// url or base64 sources (data: URLs are decoded to base64 sources), a tool
// result's inside its tool_result block.
func AnthropicRequest(msgs []agentmem.Message) AnthropicBody {
	prepared := anthropicPrepare(msgs)
	req := AnthropicBody{Messages: make([]AnthropicMessage, 0, len(prepared))}
	var system []string
	for _, m := range prepared {
		if m.Role == agentmem.RoleSystem {
			for _, p := range m.Content {
				if p.Type == agentmem.PartText && p.Text != "" {
					system = append(system, p.Text)
				}
			}
			continue
		}
		am := AnthropicMessage{Role: string(m.Role), Content: make([]AnthropicBlock, 0, len(m.Content))}
		for _, p := range m.Content {
			if b, ok := anthropicBlock(p); ok {
				am.Content = append(am.Content, b)
			}
		}
		req.Messages = append(req.Messages, am)
	}
	req.System = strings.Join(system, "\n\n")
	return req
}

// anthropicPrepare converts messages to Anthropic's shape and assembles
// them as the Anthropic format does: what AnthropicRequest writes out.
func anthropicPrepare(msgs []agentmem.Message) []agentmem.Message {
	prepared := make([]agentmem.Message, 0, len(msgs))
	for _, m := range msgs {
		if b, ok := anthropicMessage(m, false); ok {
			prepared = append(prepared, b)
		}
	}
	prepared, _ = Anthropic.Assemble(prepared, nil)
	return prepared
}

func anthropicBlock(p agentmem.Part) (AnthropicBlock, bool) {
	switch p.Type {
	case agentmem.PartText:
		return AnthropicBlock{Type: "text", Text: p.Text}, true
	case agentmem.PartImage:
		if p.Image == nil {
			return AnthropicBlock{}, false
		}
		return AnthropicBlock{Type: "image", Source: imageSource(*p.Image)}, true
	case agentmem.PartToolUse:
		if p.ToolCall == nil {
			return AnthropicBlock{}, false
		}
		return AnthropicBlock{Type: "tool_use", ID: p.ToolCall.ID, Name: p.ToolCall.Name, Input: toolInput(p.ToolCall.Arguments)}, true
	case agentmem.PartToolResult:
		b := AnthropicBlock{Type: "tool_result", ToolUseID: p.ToolCallID, Content: p.Text, IsError: p.IsError}
		if len(p.Images) > 0 {
			if p.Text != "" {
				b.Blocks = append(b.Blocks, AnthropicBlock{Type: "text", Text: p.Text})
			}
			for _, img := range p.Images {
				b.Blocks = append(b.Blocks, AnthropicBlock{Type: "image", Source: imageSource(img)})
			}
			b.Content = ""
		}
		return b, true
	}
	return AnthropicBlock{}, false
}

// toolInput returns the arguments as the JSON object a tool_use block's
// input must be.
func toolInput(args string) json.RawMessage {
	t := strings.TrimSpace(args)
	if t == "" {
		return json.RawMessage("{}")
	}
	if t[0] == '{' && json.Valid([]byte(t)) {
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(t)) == nil {
			return buf.Bytes()
		}
	}
	raw, _ := json.Marshal(map[string]string{"_raw": args})
	return raw
}

// imageSource returns the source of an image block.
func imageSource(img agentmem.Image) *AnthropicImageSource {
	if img.URL == "" {
		return &AnthropicImageSource{Type: "base64", MediaType: mediaType(img), Data: base64.StdEncoding.EncodeToString(img.Data)}
	}
	if mt, data, ok := parseDataURL(img.URL); ok {
		return &AnthropicImageSource{Type: "base64", MediaType: mt, Data: data}
	}
	return &AnthropicImageSource{Type: "url", URL: img.URL}
}

// parseDataURL splits a data: URL into its media type and base64 data,
// re-encoding percent-encoded data as base64.
func parseDataURL(u string) (mediaType, b64 string, ok bool) {
	if len(u) < 5 || !strings.EqualFold(u[:5], "data:") {
		return "", "", false
	}
	meta, data, found := strings.Cut(u[5:], ",")
	if !found {
		return "", "", false
	}
	mediaType, params, _ := strings.Cut(meta, ";")
	if mediaType == "" {
		mediaType = "text/plain"
	}
	for p := range strings.SplitSeq(params, ";") {
		if strings.EqualFold(p, "base64") {
			return mediaType, data, true
		}
	}
	raw, err := url.PathUnescape(data)
	if err != nil {
		return "", "", false
	}
	return mediaType, base64.StdEncoding.EncodeToString([]byte(raw)), true
}
