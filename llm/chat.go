package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ChatRequest is a chat-completion request.
type ChatRequest struct {
	// Model overrides Config.Model for this request.
	Model string
	// Messages is the conversation so far; at least one is required.
	Messages []Message
	// Tools are the tools the model may call.
	Tools []Tool
	// ToolChoice is "auto", "none" or "required"; any other non-empty
	// value is taken as the name of a function the model must call and
	// sent as {"type":"function","function":{"name":ToolChoice}}. Empty
	// leaves it to the server.
	ToolChoice string
	// Temperature is the sampling temperature; nil leaves it to the server
	// (so a pointer to 0 sends 0).
	Temperature *float64
	// MaxTokens caps the completion length (sent as max_tokens); 0 means
	// no cap.
	MaxTokens int
	// JSONMode asks for a JSON object answer (response_format
	// {"type":"json_object"}). OpenAI also requires the word "JSON" to
	// appear in the messages.
	JSONMode bool
	// Stop lists sequences at which generation stops.
	Stop []string
}

// ChatResponse is the first choice of a chat-completion response.
type ChatResponse struct {
	// ID is the server's completion ID.
	ID string
	// Model is the model that answered, as reported by the server.
	Model string
	// Message is the model's reply; its Role is "assistant" even if the
	// server omitted it, so it can be appended to the conversation as is.
	Message Message
	// FinishReason is why generation stopped: "stop", "length",
	// "tool_calls", "content_filter", ...
	FinishReason string
	// Usage is the token accounting, zero if the server did not report it.
	Usage Usage
}

// Usage is the token accounting of a request.
type Usage struct {
	// PromptTokens is the number of input tokens.
	PromptTokens int `json:"prompt_tokens"`
	// CompletionTokens is the number of generated tokens.
	CompletionTokens int `json:"completion_tokens"`
	// TotalTokens is PromptTokens + CompletionTokens.
	TotalTokens int `json:"total_tokens"`
}

type chatRequestWire struct {
	Model          string          `json:"model"`
	Messages       []Message       `json:"messages"`
	Tools          []Tool          `json:"tools,omitempty"`
	ToolChoice     any             `json:"tool_choice,omitempty"`
	Temperature    *float64        `json:"temperature,omitempty"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
	Stop           []string        `json:"stop,omitempty"`
}

type responseFormat struct {
	Type string `json:"type"`
}

type chatResponseWire struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int     `json:"index"`
		Message      Message `json:"message"`
		FinishReason string  `json:"finish_reason"`
	} `json:"choices"`
	Usage Usage           `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// toolChoiceValue maps ChatRequest.ToolChoice to its wire value.
func toolChoiceValue(s string) any {
	switch s {
	case "":
		return nil
	case "auto", "none", "required":
		return s
	default:
		type name struct {
			Name string `json:"name"`
		}
		return struct {
			Type     string `json:"type"`
			Function name   `json:"function"`
		}{"function", name{s}}
	}
}

// Chat sends a chat-completion request (POST {BaseURL}/chat/completions)
// and returns the first choice.
//
// It fails with an error wrapping ErrConfig when neither req.Model nor
// Config.Model is set, and with an *APIError for an error response. It
// fails with ErrEmptyResponse when the response has no choices, and with
// an error wrapping ErrMalformedResponse when the response is not valid
// JSON.
func (c *Client) Chat(ctx context.Context, req ChatRequest) (*ChatResponse, error) {
	model := req.Model
	if model == "" {
		model = c.cfg.Model
	}
	if model == "" {
		return nil, fmt.Errorf("%w: no chat model: set Config.Model or ChatRequest.Model", ErrConfig)
	}
	if len(req.Messages) == 0 {
		return nil, errors.New("llm: chat request has no messages")
	}
	w := chatRequestWire{
		Model:       model,
		Messages:    req.Messages,
		Tools:       req.Tools,
		ToolChoice:  toolChoiceValue(req.ToolChoice),
		Temperature: req.Temperature,
		MaxTokens:   req.MaxTokens,
		Stop:        req.Stop,
	}
	if req.JSONMode {
		w.ResponseFormat = &responseFormat{Type: "json_object"}
	}
	var out chatResponseWire
	if err := c.post(ctx, "chat/completions", w, &out); err != nil {
		return nil, err
	}
	if len(out.Choices) == 0 {
		apiErr := &APIError{StatusCode: 200}
		if fillErrorValue(apiErr, out.Error) {
			if apiErr.Message == "" {
				apiErr.Message = "error object in a 200 response"
			}
			return nil, apiErr
		}
		return nil, ErrEmptyResponse
	}
	choice := out.Choices[0]
	for _, ch := range out.Choices {
		if ch.Index == 0 {
			choice = ch
			break
		}
	}
	msg := choice.Message
	if msg.Role == "" {
		msg.Role = "assistant"
	}
	return &ChatResponse{
		ID:           out.ID,
		Model:        out.Model,
		Message:      msg,
		FinishReason: choice.FinishReason,
		Usage:        out.Usage,
	}, nil
}
