package agentmem

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem/internal/jsoncheck"
)

// Role is the author of a message.
type Role string

// The roles a message can have. AgentCall and AgentResponse carry requests
// and replies between agents in a multi-agent run; when rendered for a
// model they become user and assistant messages.
const (
	RoleSystem        Role = "system"
	RoleUser          Role = "user"
	RoleAssistant     Role = "assistant"
	RoleTool          Role = "tool"
	RoleAgentCall     Role = "agent_call"
	RoleAgentResponse Role = "agent_response"
)

// Valid reports whether r is one of the known roles.
func (r Role) Valid() bool {
	switch r {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool, RoleAgentCall, RoleAgentResponse:
		return true
	}
	return false
}

// PartType is the kind of a content part.
type PartType string

// Content part kinds. Text parts appear in any message. Image parts appear
// in any but system and agent_response messages; a tool's screenshot is an
// image part of its tool message. ToolUse and ToolResult parts appear only
// in messages rendered for block-based APIs (Anthropic's tool_use and
// tool_result blocks). Canonical messages carry tool calls in
// Message.ToolCalls and tool results as RoleTool messages.
const (
	PartText       PartType = "text"
	PartImage      PartType = "image"
	PartToolUse    PartType = "tool_use"
	PartToolResult PartType = "tool_result"
)

// Image is an image given by URL or inline data.
type Image struct {
	URL       string `json:"url,omitempty"`        // http(s) URL or data: URL
	MediaType string `json:"media_type,omitempty"` // e.g. "image/png", for inline data
	Data      []byte `json:"data,omitempty"`       // inline bytes (base64 in JSON)
	Detail    string `json:"detail,omitempty"`     // "low", "high" or "auto" (OpenAI)
}

// Describe returns the text that stands for the image where a chat format
// cannot show one (an assistant message, for every API). It is
// "[image: URL]" for an image given by an http(s) URL. It is
// "[image: MEDIA_TYPE, SIZE]" for inline data or a data: URL, SIZE being
// its bytes ("512 B", "12 kB", "1.5 MB"); the media type is left out when
// unknown. The model then knows an image was there and what it was.
func (img Image) Describe() string {
	mediaType, size := img.MediaType, len(img.Data)
	if img.URL != "" {
		mt, n, ok := dataURLSize(img.URL)
		if !ok {
			return "[image: " + img.URL + "]"
		}
		mediaType, size = mt, n
	}
	if mediaType == "" {
		return "[image: " + byteSize(size) + "]"
	}
	return "[image: " + mediaType + ", " + byteSize(size) + "]"
}

// dataURLSize returns the media type of a data: URL and the size of the
// bytes it holds. ok is false for a URL of another scheme.
func dataURLSize(u string) (mediaType string, size int, ok bool) {
	if len(u) < 5 || !strings.EqualFold(u[:5], "data:") {
		return "", 0, false
	}
	meta, data, _ := strings.Cut(u[5:], ",")
	mediaType, params, _ := strings.Cut(meta, ";")
	for p := range strings.SplitSeq(params, ";") {
		if strings.EqualFold(p, "base64") {
			data = strings.TrimRight(data, "=")
			return mediaType, len(data) * 3 / 4, true
		}
	}
	// Percent-encoded: each %XX is one byte.
	return mediaType, len(data) - 2*strings.Count(data, "%"), true
}

// byteSize writes a size in bytes for people: B below 1000, kB (rounded)
// below a million, MB with one decimal above.
func byteSize(n int) string {
	switch {
	case n < 1000:
		return strconv.Itoa(n) + " B"
	case n < 999500:
		return strconv.Itoa((n+500)/1000) + " kB"
	}
	return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + " MB"
}

// Part is one piece of a message's content.
type Part struct {
	Type  PartType `json:"type"`
	Text  string   `json:"text,omitempty"`
	Image *Image   `json:"image,omitempty"`
	// ToolCall is set on PartToolUse parts.
	ToolCall *ToolCall `json:"tool_call,omitempty"`
	// ToolCallID and IsError are set on PartToolResult parts. The result
	// text is in Text and its images, if any, in Images (Anthropic's
	// tool_result block holds image blocks).
	ToolCallID string  `json:"tool_call_id,omitempty"`
	IsError    bool    `json:"is_error,omitempty"`
	Images     []Image `json:"images,omitempty"`
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Type: PartText, Text: s} }

// ImagePart returns an image part.
func ImagePart(img Image) Part { return Part{Type: PartImage, Image: &img} }

// Content is a message's content: a list of parts. In JSON, content made of
// a single text part is a plain string (as chat APIs expect), empty content
// is omitted, and anything else is an array of parts. Unmarshalling also
// accepts OpenAI's {"type":"image_url","image_url":{"url":...}} parts.
type Content []Part

// Text returns content holding the single text part s.
func Text(s string) Content { return Content{TextPart(s)} }

// String returns the concatenated text of the text and tool-result parts.
func (c Content) String() string {
	switch len(c) {
	case 0:
		return ""
	case 1:
		return c[0].Text
	}
	var b strings.Builder
	for i, p := range c {
		if p.Text == "" {
			continue
		}
		if i > 0 && b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// MarshalJSON encodes single-text content as a string and other content as
// an array of parts.
func (c Content) MarshalJSON() ([]byte, error) {
	if len(c) == 0 {
		return []byte("null"), nil
	}
	if len(c) == 1 && c[0].Type == PartText {
		return marshalJSON(c[0].Text)
	}
	return marshalJSON([]Part(c))
}

// UnmarshalJSON accepts a string, null, or an array of parts.
func (c *Content) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case len(data) == 0 || string(data) == "null":
		*c = nil
		return nil
	case data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*c = Content{TextPart(s)}
		return nil
	case data[0] == '[':
		var raw []json.RawMessage
		if err := json.Unmarshal(data, &raw); err != nil {
			return err
		}
		parts := make(Content, 0, len(raw))
		for i, r := range raw {
			p, err := decodePart(r)
			if err != nil {
				return fmt.Errorf("content[%d]: %w", i, err)
			}
			parts = append(parts, p)
		}
		*c = parts
		return nil
	}
	return invalidf("content", "must be a string, null or an array of parts")
}

// decodePart decodes one content part in agentmem's own shape or in
// OpenAI's image_url shape.
func decodePart(data []byte) (Part, error) {
	var probe struct {
		Type PartType `json:"type"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return Part{}, err
	}
	if probe.Type == "image_url" {
		var img struct {
			Type     PartType `json:"type"`
			ImageURL *struct {
				URL    string `json:"url"`
				Detail string `json:"detail"`
			} `json:"image_url"`
		}
		if err := jsoncheck.Decode(data, &img); err != nil {
			return Part{}, decodeError("content", err)
		}
		if img.ImageURL == nil || img.ImageURL.URL == "" {
			return Part{}, invalidf("image_url.url", "is required")
		}
		return ImagePart(Image{URL: img.ImageURL.URL, Detail: img.ImageURL.Detail}), nil
	}
	type plain Part
	var p plain
	if err := jsoncheck.Decode(data, &p); err != nil {
		return Part{}, decodeError("content", err)
	}
	switch p.Type {
	case PartText, PartToolResult:
	case PartImage:
		if p.Image == nil {
			return Part{}, invalidf("image", "is required for an image part")
		}
	case PartToolUse:
		if p.ToolCall == nil {
			return Part{}, invalidf("tool_call", "is required for a tool_use part")
		}
	default:
		return Part{}, invalidf("type", "unknown content part type %q", p.Type)
	}
	return Part(p), nil
}

// ToolCall is a model's request to call a function. In JSON it has
// OpenAI's shape: {"id","type":"function","function":{"name","arguments"}}.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // the arguments as JSON text, exactly as the model wrote them
}

type toolCallJSON struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// MarshalJSON encodes the call in OpenAI's shape.
func (tc ToolCall) MarshalJSON() ([]byte, error) {
	var j toolCallJSON
	j.ID, j.Type = tc.ID, "function"
	j.Function.Name, j.Function.Arguments = tc.Name, tc.Arguments
	return marshalJSON(j)
}

// UnmarshalJSON decodes OpenAI's shape, strictly: a field it does not
// have is refused. A missing type means "function"; any other type is
// refused.
func (tc *ToolCall) UnmarshalJSON(data []byte) error {
	var j toolCallJSON
	if err := jsoncheck.Decode(data, &j); err != nil {
		var e *jsoncheck.Error
		if errors.As(err, &e) && strings.HasSuffix(e.Reason, "is an unknown member") {
			return invalidf("tool_calls", "unknown field %q in a tool call (allowed: id, type, function with name and arguments)", e.Path)
		}
		return decodeError("tool_calls", err)
	}
	if j.Type != "" && j.Type != "function" {
		return invalidf("tool_calls.type", "unsupported tool call type %q", j.Type)
	}
	*tc = ToolCall{ID: j.ID, Name: j.Function.Name, Arguments: j.Function.Arguments}
	return nil
}

// AgentCall is one agent's request to another in a multi-agent run.
type AgentCall struct {
	ID      string `json:"id,omitempty"`
	Agent   string `json:"agent"`
	Request string `json:"request"`
}

// Message is one chat message. Its JSON form is stable and round-trips.
// The role, content, name, tool_calls and tool_call_id fields have the
// shape of OpenAI's chat API, so OpenAI-format messages decode directly.
type Message struct {
	ID         string      `json:"id,omitempty"`
	Role       Role        `json:"role"`
	Content    Content     `json:"content,omitempty"`
	Name       string      `json:"name,omitempty"`
	ToolCalls  []ToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string      `json:"tool_call_id,omitempty"`
	AgentCalls []AgentCall `json:"agent_calls,omitempty"`
	// Data holds a structured (JSON) payload, for agents that exchange
	// objects rather than text.
	Data     json.RawMessage   `json:"structured_data,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Time     time.Time         `json:"timestamp,omitzero"`
}

// Text returns the message's text content.
func (m Message) Text() string { return m.Content.String() }

// Clone returns a deep copy of m.
func (m Message) Clone() Message {
	m.Content = cloneContent(m.Content)
	m.ToolCalls = cloneSlice(m.ToolCalls)
	m.AgentCalls = cloneSlice(m.AgentCalls)
	m.Data = cloneSlice(m.Data)
	m.Metadata = cloneMap(m.Metadata)
	return m
}

// Validate checks the message's own invariants. It needs a known role,
// valid UTF-8, tool calls with IDs and names, a tool message with its call
// ID, and structured data that is valid JSON.
func (m Message) Validate() error {
	if !m.Role.Valid() {
		return invalidf("role", "unknown role %q", m.Role)
	}
	if err := validateContent("content", m.Content); err != nil {
		return err
	}
	if m.Role == RoleSystem || m.Role == RoleAgentResponse {
		// A system prompt is text in every API, and an agent's response
		// is text between agents.
		for i, p := range m.Content {
			if p.Type == PartImage {
				return invalidf(fmt.Sprintf("content[%d]", i), "images are accepted in user, assistant and tool messages, not %s", m.Role)
			}
		}
	}
	if err := validText("name", m.Name); err != nil {
		return err
	}
	if err := validateToolCalls("tool_calls", m.ToolCalls); err != nil {
		return err
	}
	if len(m.ToolCalls) > 0 && m.Role != RoleAssistant {
		return invalidf("tool_calls", "only assistant messages carry tool calls, not %s", m.Role)
	}
	if m.Role == RoleTool && m.ToolCallID == "" {
		return invalidf("tool_call_id", "is required on a tool message")
	}
	if err := validText("tool_call_id", m.ToolCallID); err != nil {
		return err
	}
	for i, ac := range m.AgentCalls {
		if ac.Agent == "" {
			return invalidf(fmt.Sprintf("agent_calls[%d].agent", i), "is required")
		}
		if err := validText(fmt.Sprintf("agent_calls[%d].request", i), ac.Request); err != nil {
			return err
		}
	}
	if len(m.Data) > 0 && !json.Valid(m.Data) {
		return invalidf("structured_data", "is not valid JSON")
	}
	for k, v := range m.Metadata {
		if err := validText("metadata key", k); err != nil {
			return err
		}
		if err := validText("metadata["+k+"]", v); err != nil {
			return err
		}
	}
	return nil
}

func validateContent(field string, c Content) error {
	for i, p := range c {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := validText(f+".text", p.Text); err != nil {
			return err
		}
		switch p.Type {
		case PartText:
		case PartToolResult:
			if err := validImages(f+".images", p.Images); err != nil {
				return err
			}
		case PartImage:
			if p.Image == nil || (p.Image.URL == "" && len(p.Image.Data) == 0) {
				return invalidf(f+".image", "needs a URL or data")
			}
		case PartToolUse:
			if p.ToolCall == nil {
				return invalidf(f+".tool_call", "is required")
			}
		default:
			return invalidf(f+".type", "unknown part type %q", p.Type)
		}
	}
	return nil
}

// validImages checks that every image has a URL or data.
func validImages(field string, imgs []Image) error {
	for i, img := range imgs {
		if img.URL == "" && len(img.Data) == 0 {
			return invalidf(fmt.Sprintf("%s[%d]", field, i), "needs a URL or data")
		}
	}
	return nil
}

// sameImages reports whether two lists hold the same images in order.
func sameImages(a, b []Image) bool {
	return slices.EqualFunc(a, b, func(x, y Image) bool {
		return x.URL == y.URL && x.MediaType == y.MediaType && x.Detail == y.Detail && bytes.Equal(x.Data, y.Data)
	})
}

func validateToolCalls(field string, calls []ToolCall) error {
	seen := make(map[string]bool, len(calls))
	for i, tc := range calls {
		f := fmt.Sprintf("%s[%d]", field, i)
		if tc.ID == "" {
			return invalidf(f+".id", "is required")
		}
		if seen[tc.ID] {
			return invalidf(f+".id", "duplicate tool call id %q", tc.ID)
		}
		seen[tc.ID] = true
		if tc.Name == "" {
			return invalidf(f+".function.name", "is required")
		}
		if err := validText(f+".id", tc.ID); err != nil {
			return err
		}
		if err := validText(f+".function.name", tc.Name); err != nil {
			return err
		}
		if err := validText(f+".function.arguments", tc.Arguments); err != nil {
			return err
		}
	}
	return nil
}

func cloneContent(c Content) Content {
	if c == nil {
		return nil
	}
	out := make(Content, len(c))
	for i, p := range c {
		out[i] = clonePart(p)
	}
	return out
}

// clonePart copies the parts of p that are behind pointers.
func clonePart(p Part) Part {
	if p.Image != nil {
		img := *p.Image
		img.Data = cloneSlice(img.Data)
		p.Image = &img
	}
	if p.ToolCall != nil {
		tc := *p.ToolCall
		p.ToolCall = &tc
	}
	p.Images = cloneImages(p.Images)
	return p
}

func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return nil
	}
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
