// Package scripted is the stand-in model of the examples: a tiny
// OpenAI-compatible chat endpoint that answers as a script the example
// supplies says, so that an example runs offline through the real HTTP
// client. Like a real API it refuses a conversation whose tool messages do
// not answer the calls before them (a tool result without its call, a call
// without its result) with HTTP 400, which is what an agent's memory must
// never send.
package scripted

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"

	"github.com/agentmem/agentmem/llm"
)

// Message is a message of a chat request, as the wire carries it.
type Message struct {
	Role       string     `json:"role"`
	Content    any        `json:"content"`
	ToolCallID string     `json:"tool_call_id"`
	ToolCalls  []ToolCall `json:"tool_calls"`
}

// ToolCall is a tool call of an assistant message.
type ToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Text returns the message's text, whether it came as a string or as
// parts.
func (m Message) Text() string {
	switch c := m.Content.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if part, ok := p.(map[string]any); ok {
				if t, ok := part["text"].(string); ok {
					b.WriteString(t)
				}
			}
		}
		return b.String()
	}
	return ""
}

// Request is what the model is asked: a valid conversation, never empty,
// and the tools it may call (none in a request for a plain completion,
// such as a summary).
type Request struct {
	Messages []Message
	Tools    []json.RawMessage
}

// Reply is what the model answers: Text, and, when Tool is set, a call of
// the tool Tool with Arguments (JSON text).
type Reply struct {
	Text      string
	Tool      string
	Arguments string
}

// Script plays the model: it answers each valid request the endpoint
// receives, one at a time.
type Script func(Request) Reply

// New returns the endpoint (POST .../chat/completions) of a model that
// plays script. Its replies and their tool calls are numbered in the order
// it answers them.
func New(script Script) http.Handler { return &model{script: script} }

type model struct {
	script Script
	mu     sync.Mutex
	n      int
}

func (s *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Messages []Message         `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		apiError(w, "invalid JSON: "+err.Error())
		return
	}
	if err := validConversation(req.Messages); err != nil {
		apiError(w, err.Error())
		return
	}
	// One request at a time, so that a script may count them.
	s.mu.Lock()
	s.n++
	n := s.n
	reply := s.script(Request{Messages: req.Messages, Tools: req.Tools})
	s.mu.Unlock()
	msg := map[string]any{"role": "assistant", "content": reply.Text}
	finish := "stop"
	if reply.Tool != "" {
		msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_%d", n), "type": "function",
			"function": map[string]any{"name": reply.Tool, "arguments": reply.Arguments}}}
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "model": "scripted",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]int{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
	})
}

// validConversation applies OpenAI's rules on tool messages: each answers
// a call of the assistant message before it, and every call is answered
// before the next message that is not a tool's.
func validConversation(msgs []Message) error {
	if len(msgs) == 0 {
		return fmt.Errorf("messages must not be empty")
	}
	open := map[string]bool{}
	for i, m := range msgs {
		if m.Role == "tool" {
			if !open[m.ToolCallID] {
				return fmt.Errorf("messages[%d]: a tool message must answer a preceding tool call (%q)", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			continue
		}
		if len(open) > 0 {
			return fmt.Errorf("messages[%d]: tool calls %v have no tool message", i, slices.Sorted(maps.Keys(open)))
		}
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("tool calls %v have no tool message", slices.Sorted(maps.Keys(open)))
	}
	return nil
}

func apiError(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}

// Model is the model an example talks to.
type Model struct {
	Client *llm.Client
	// Offline is set when the client talks to the scripted model.
	Offline bool
	server  *httptest.Server
}

// Connect returns the model an example talks to: conf when set; else the
// OpenAI-compatible endpoint the environment names
// (AGENTMEM_LLM_BASE_URL, with AGENTMEM_LLM_API_KEY and AGENTMEM_LLM_MODEL
// as needed); else a model playing script, served on a loopback port,
// which it says on out. Close releases it.
func Connect(conf *llm.Config, script Script, out io.Writer) (*Model, error) {
	m := &Model{}
	var c llm.Config
	switch env, ok := llm.ConfigFromEnv("AGENTMEM_LLM"); {
	case conf != nil:
		c = *conf
	case ok:
		c = env
	default:
		m.server = httptest.NewServer(New(script))
		m.Offline = true
		c = llm.Config{BaseURL: m.server.URL + "/v1", Model: "scripted"}
	}
	client, err := llm.New(c)
	if err != nil {
		m.Close()
		return nil, err
	}
	m.Client = client
	if m.Offline {
		fmt.Fprintln(out, "(no AGENTMEM_LLM_BASE_URL set: using the built-in scripted model)")
	}
	return m, nil
}

// Close stops the scripted model's server, if the model is one.
func (m *Model) Close() {
	if m.server != nil {
		m.server.Close()
	}
}
