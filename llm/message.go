package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Message is one chat message in the OpenAI wire shape.
//
// Content marshals as a JSON string when it is plain text and as an array
// of parts otherwise. An assistant message with ToolCalls and no content
// marshals "content": null, as OpenAI expects.
type Message struct {
	// Role is "system", "user", "assistant" or "tool" (some servers also
	// accept "developer").
	Role string `json:"role"`
	// Content is the message text or its parts.
	Content Content `json:"content"`
	// Name optionally names the participant.
	Name string `json:"name,omitempty"`
	// ToolCalls are the tool invocations requested by an assistant message.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is, on a "tool" message, the ID of the ToolCall it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// MarshalJSON encodes m in the OpenAI wire shape, with "content": null when
// m has ToolCalls and no content.
func (m Message) MarshalJSON() ([]byte, error) {
	type wire struct {
		Role       string     `json:"role"`
		Content    *Content   `json:"content"`
		Name       string     `json:"name,omitempty"`
		ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
		ToolCallID string     `json:"tool_call_id,omitempty"`
	}
	w := wire{Role: m.Role, Name: m.Name, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
	if !m.Content.IsZero() || len(m.ToolCalls) == 0 {
		w.Content = &m.Content
	}
	return json.Marshal(w)
}

// Content is the content of a Message: plain Text, or a list of Parts
// (text and images). When Parts is non-empty it is what is sent; a
// non-empty Text alongside Parts is sent as a leading text part.
//
// It marshals as a JSON string when Parts is empty (the empty string for
// the zero Content) and as an array of parts otherwise. It unmarshals from
// a JSON string, null (the zero Content) or an array of parts; an empty
// array gives the zero Content.
type Content struct {
	// Text is the plain-text content.
	Text string
	// Parts is the multi-part content; nil for plain text.
	Parts []ContentPart
}

// Content part types.
const (
	// PartText is the Type of a text ContentPart.
	PartText = "text"
	// PartImageURL is the Type of an image ContentPart.
	PartImageURL = "image_url"
)

// ContentPart is one part of a multi-part Content. It marshals as OpenAI's
// {"type":"text","text":...} or
// {"type":"image_url","image_url":{"url":...,"detail":...}}.
type ContentPart struct {
	// Type is PartText or PartImageURL. Other types are carried through
	// with whatever text and image fields they have.
	Type string
	// Text is the text of a PartText part.
	Text string
	// ImageURL is the image URL (http(s) or a data: URL) of a PartImageURL part.
	ImageURL string
	// Detail is the optional image detail level: "auto", "low" or "high".
	Detail string
}

// TextContent returns plain-text Content.
func TextContent(s string) Content { return Content{Text: s} }

// PartsContent returns multi-part Content made of parts.
func PartsContent(parts ...ContentPart) Content { return Content{Parts: parts} }

// TextPart returns a text ContentPart.
func TextPart(s string) ContentPart { return ContentPart{Type: PartText, Text: s} }

// ImagePart returns an image ContentPart; detail may be empty.
func ImagePart(url, detail string) ContentPart {
	return ContentPart{Type: PartImageURL, ImageURL: url, Detail: detail}
}

// IsZero reports whether c has neither text nor parts.
func (c Content) IsZero() bool { return c.Text == "" && len(c.Parts) == 0 }

// String returns the text of c: Text followed by the Text of every text
// part, parts separated by newlines. Images are left out.
func (c Content) String() string {
	if len(c.Parts) == 0 {
		return c.Text
	}
	var texts []string
	if c.Text != "" {
		texts = append(texts, c.Text)
	}
	for _, p := range c.Parts {
		if p.Type == PartText {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// MarshalJSON encodes c as a JSON string, or as an array of parts when
// c.Parts is non-empty.
func (c Content) MarshalJSON() ([]byte, error) {
	if len(c.Parts) == 0 {
		return json.Marshal(c.Text)
	}
	parts := c.Parts
	if c.Text != "" {
		parts = append([]ContentPart{TextPart(c.Text)}, parts...)
	}
	return json.Marshal(parts)
}

// UnmarshalJSON decodes a JSON string, null or an array of parts into c.
func (c *Content) UnmarshalJSON(data []byte) error {
	*c = Content{}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return errors.New("llm: content: empty JSON value")
	}
	switch data[0] {
	case 'n':
		if !bytes.Equal(data, []byte("null")) {
			return fmt.Errorf("llm: content: invalid JSON %.20q", data)
		}
		return nil
	case '"':
		return json.Unmarshal(data, &c.Text)
	case '[':
		var parts []ContentPart
		if err := json.Unmarshal(data, &parts); err != nil {
			return err
		}
		if len(parts) > 0 {
			c.Parts = parts
		}
		return nil
	default:
		return fmt.Errorf("llm: content must be a string, null or an array of parts, got %.20q", data)
	}
}

// partWire is the JSON shape of a ContentPart.
type partWire struct {
	Type     string          `json:"type"`
	Text     *string         `json:"text,omitempty"`
	ImageURL json.RawMessage `json:"image_url,omitempty"`
}

// imageURLWire is the JSON shape of an image_url object.
type imageURLWire struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// MarshalJSON encodes p in the OpenAI content-part shape.
func (p ContentPart) MarshalJSON() ([]byte, error) {
	w := partWire{Type: p.Type}
	if p.Text != "" || p.Type == PartText {
		w.Text = &p.Text
	}
	if p.ImageURL != "" || p.Detail != "" || p.Type == PartImageURL {
		img, err := json.Marshal(imageURLWire{URL: p.ImageURL, Detail: p.Detail})
		if err != nil {
			return nil, err
		}
		w.ImageURL = img
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes an OpenAI content part. image_url may be an object
// {"url","detail"} or, as some servers send it, a bare URL string.
func (p *ContentPart) UnmarshalJSON(data []byte) error {
	*p = ContentPart{}
	var w partWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	p.Type = w.Type
	if w.Text != nil {
		p.Text = *w.Text
	}
	img := bytes.TrimSpace(w.ImageURL)
	if len(img) == 0 || bytes.Equal(img, []byte("null")) {
		return nil
	}
	switch img[0] {
	case '"':
		return json.Unmarshal(img, &p.ImageURL)
	case '{':
		var iw imageURLWire
		if err := json.Unmarshal(img, &iw); err != nil {
			return err
		}
		p.ImageURL, p.Detail = iw.URL, iw.Detail
		return nil
	default:
		return fmt.Errorf("llm: content part image_url must be an object or a string, got %.20q", img)
	}
}

// ToolCall is a tool invocation requested by the model.
type ToolCall struct {
	// ID identifies the call; the "tool" message answering it repeats it
	// as ToolCallID.
	ID string `json:"id"`
	// Type is "function"; left empty, it is sent as "function".
	Type string `json:"type"`
	// Function names the function and carries its arguments.
	Function FunctionCall `json:"function"`
}

// MarshalJSON encodes tc, sending an empty Type as "function".
func (tc ToolCall) MarshalJSON() ([]byte, error) {
	type plain ToolCall
	if tc.Type == "" {
		tc.Type = "function"
	}
	return json.Marshal(plain(tc))
}

// FunctionCall is the function part of a ToolCall.
type FunctionCall struct {
	// Name is the function's name.
	Name string `json:"name"`
	// Arguments are the call's arguments as a JSON text, as produced by the
	// model (it may not be valid JSON). Decoding also accepts servers that
	// send the arguments as a JSON object rather than a string; the object
	// is kept as compact JSON text.
	Arguments string `json:"arguments"`
}

// UnmarshalJSON decodes f, accepting arguments as a JSON string (the
// OpenAI shape), a JSON object or array, or null.
func (f *FunctionCall) UnmarshalJSON(data []byte) error {
	var w struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*f = FunctionCall{Name: w.Name}
	raw := bytes.TrimSpace(w.Arguments)
	switch {
	case len(raw) == 0 || bytes.Equal(raw, []byte("null")):
		return nil
	case raw[0] == '"':
		return json.Unmarshal(raw, &f.Arguments)
	default:
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return err
		}
		f.Arguments = buf.String()
		return nil
	}
}

// Tool is a tool the model may call.
type Tool struct {
	// Type is "function"; left empty, it is sent as "function".
	Type string `json:"type"`
	// Function describes the function.
	Function FunctionDef `json:"function"`
}

// MarshalJSON encodes t, sending an empty Type as "function".
func (t Tool) MarshalJSON() ([]byte, error) {
	type plain Tool
	if t.Type == "" {
		t.Type = "function"
	}
	return json.Marshal(plain(t))
}

// NewTool returns a function Tool; parameters is a JSON Schema object and
// may be nil for a function without parameters.
func NewTool(name, description string, parameters json.RawMessage) Tool {
	return Tool{Type: "function", Function: FunctionDef{Name: name, Description: description, Parameters: parameters}}
}

// FunctionDef describes a callable function.
type FunctionDef struct {
	// Name is the function name the model uses to call it.
	Name string `json:"name"`
	// Description tells the model what the function does.
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments object; omitted when nil.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}
