package render

import (
	"encoding/base64"
	"encoding/json"
	"net/http"

	"github.com/agentmem/agentmem"
)

// OpenAIMessage is one message of an OpenAI chat-completions request, in
// the API's exact JSON shape.
type OpenAIMessage struct {
	// Role is "system", "user", "assistant" or "tool".
	Role string `json:"role"`
	// Content is a string, a []OpenAIPart, or nil (JSON null, only for an
	// assistant message that makes tool calls and says nothing).
	Content any `json:"content"`
	// Name optionally names the author of a system, user or assistant
	// message.
	Name       string           `json:"name,omitempty"`
	ToolCalls  []OpenAIToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

// OpenAIPart is one content part: {"type":"text","text":...} or
// {"type":"image_url","image_url":{"url":...}}.
type OpenAIPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text,omitempty"`
	ImageURL *OpenAIImageURL `json:"image_url,omitempty"`
}

// OpenAIImageURL is the image of an image_url part: an http(s) URL or a
// data: URL, with an optional detail level ("low", "high" or "auto").
type OpenAIImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// OpenAIToolCall is a function call of an assistant message.
type OpenAIToolCall struct {
	ID       string         `json:"id"`
	Type     string         `json:"type"` // always "function"
	Function OpenAIFunction `json:"function"`
}

// OpenAIFunction is the function and arguments of a tool call.
type OpenAIFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON text, as the model wrote it
}

// OpenAIRequest encodes messages as the "messages" of an OpenAI
// chat-completions request. It accepts messages of any format of this
// package:
//
//   - agent_call and agent_response messages become user and assistant
//     messages (agentmem.ChatRoles); agent calls and structured data, which
//     the API has no field for, are appended as text parts;
//   - tool_use parts become tool calls and each tool_result part its own
//     tool message (the API has no error flag: IsError is lost);
//   - inline image data becomes a data: URL; the images of tool and
//     assistant messages are written as image_url parts of their content,
//     as agentmem's own routes take them (DecodeOpenAIMessages), though
//     OpenAI's API takes images from the user only (the OpenAI format
//     never puts them elsewhere: see agentmem.OpenAI);
//   - a single text part is a plain string, empty text parts are left out,
//     and empty content is "" except for an assistant message with tool
//     calls, whose content is null;
//   - agentmem's own fields (ID, metadata, time) are left out, and so is
//     the name of a tool message, which the API does not define.
func OpenAIRequest(msgs []agentmem.Message) []OpenAIMessage {
	out := make([]OpenAIMessage, 0, len(msgs))
	for _, m := range msgs {
		out = appendOpenAI(out, chatMessage(m))
	}
	return out
}

// FromOpenAIMessages converts messages of OpenAI's wire shape back to
// agentmem messages. It is the inverse of OpenAIRequest, and what turns a
// model's reply into a message to add to a memory. It hands the messages'
// JSON to DecodeOpenAIMessages, so one definition of valid OpenAI input
// applies. Content may be any value that marshals to an OpenAI content
// value: a string, nil, []OpenAIPart, or what encoding/json decodes one
// to. Errors wrap agentmem.ErrInvalid and name the message, e.g.
// "messages[1].tool_call_id".
func FromOpenAIMessages(msgs []OpenAIMessage) ([]agentmem.Message, error) {
	if msgs == nil {
		msgs = []OpenAIMessage{}
	}
	data, err := json.Marshal(msgs)
	if err != nil {
		return nil, &agentmem.InvalidError{Field: "messages", Reason: "do not encode as JSON: " + err.Error()}
	}
	return DecodeOpenAIMessages(data)
}

func appendOpenAI(out []OpenAIMessage, m agentmem.Message) []OpenAIMessage {
	calls := make([]OpenAIToolCall, 0, len(m.ToolCalls))
	for _, tc := range m.ToolCalls {
		calls = append(calls, openAICall(tc))
	}
	var rest agentmem.Content
	blocks := false
	for _, p := range m.Content {
		switch p.Type {
		case agentmem.PartToolUse:
			blocks = true
			if p.ToolCall != nil {
				calls = append(calls, openAICall(*p.ToolCall))
			}
		case agentmem.PartToolResult:
			blocks = true
			var content any = p.Text
			if len(p.Images) > 0 {
				c := agentmem.Text(p.Text)
				for _, img := range p.Images {
					c = append(c, agentmem.ImagePart(img))
				}
				content = openAIContent(c, false)
			}
			out = append(out, OpenAIMessage{Role: string(agentmem.RoleTool), Content: content, ToolCallID: p.ToolCallID})
		default:
			rest = append(rest, p)
		}
	}
	if blocks && len(rest) == 0 && len(calls) == 0 {
		return out // the message was only tool results
	}
	msg := OpenAIMessage{Role: string(m.Role), Name: m.Name, ToolCallID: m.ToolCallID}
	if m.Role == agentmem.RoleTool {
		msg.Name = ""
	}
	if len(calls) > 0 {
		msg.ToolCalls = calls
	}
	msg.Content = openAIContent(rest, m.Role == agentmem.RoleAssistant && len(calls) > 0)
	return append(out, msg)
}

func openAICall(tc agentmem.ToolCall) OpenAIToolCall {
	return OpenAIToolCall{ID: tc.ID, Type: "function", Function: OpenAIFunction{Name: tc.Name, Arguments: tc.Arguments}}
}

// openAIContent encodes content parts; nullable allows null for empty
// content.
func openAIContent(parts agentmem.Content, nullable bool) any {
	ps := make([]OpenAIPart, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case agentmem.PartText:
			if p.Text != "" {
				ps = append(ps, OpenAIPart{Type: "text", Text: p.Text})
			}
		case agentmem.PartImage:
			if p.Image != nil {
				ps = append(ps, OpenAIPart{Type: "image_url", ImageURL: &OpenAIImageURL{URL: imageURL(*p.Image), Detail: p.Image.Detail}})
			}
		}
	}
	switch {
	case len(ps) == 0 && nullable:
		return nil
	case len(ps) == 0:
		return ""
	case len(ps) == 1 && ps[0].Type == "text":
		return ps[0].Text
	}
	return ps
}

// imageURL returns the image's URL, or a data: URL of its inline bytes.
func imageURL(img agentmem.Image) string {
	if img.URL != "" {
		return img.URL
	}
	return "data:" + mediaType(img) + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
}

// mediaType returns the image's media type, sniffed from its bytes when
// it is not given.
func mediaType(img agentmem.Image) string {
	if img.MediaType != "" {
		return img.MediaType
	}
	return http.DetectContentType(img.Data)
}
