package api

// The OpenAI chat messages of POST /v1/sessions/{id}/messages and of the
// answer of a pop, in the exact JSON shape of OpenAI's chat-completions
// API. The server folds the messages it is sent into steps; a program
// with agentmem.Message values encodes them with render.OpenAIRequest
// (package client/remote does).

// OpenAIMessage is one OpenAI chat message.
type OpenAIMessage struct {
	// Role is "system", "user", "assistant" or "tool".
	Role string `json:"role"`
	// Content is a string, a []OpenAIPart, or nil (JSON null, only for an
	// assistant message that makes tool calls and says nothing). Decoded,
	// parts are []any of JSON objects.
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
