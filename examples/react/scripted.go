package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
)

// scriptedModel is a tiny OpenAI-compatible chat endpoint that plays a
// fixed script, so the example runs offline through the real HTTP client.
// Like a real API it refuses invalid conversations (a tool result without
// its call, a call without its result) with HTTP 400, which is what the
// memory's budgeting must never produce.
type scriptedModel struct {
	mu   sync.Mutex
	turn int
}

func newScriptedModel() http.Handler { return &scriptedModel{} }

type wireMessage struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func (s *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Messages []wireMessage     `json:"messages"`
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
	if len(req.Tools) == 0 { // a summarization call, not an agent turn
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "sum", "model": "scripted",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": "Summary: the agent looked up weather and stored temperatures in its scratchpad."}}}})
		return
	}
	s.mu.Lock()
	s.turn++
	turn := s.turn
	s.mu.Unlock()
	text, name, args := s.next(turn, req.Messages)
	msg := map[string]any{"role": "assistant", "content": text}
	finish := "stop"
	if name != "" {
		msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_%d", turn), "type": "function",
			"function": map[string]any{"name": name, "arguments": args}}}
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", turn), "model": "scripted",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]int{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
	})
}

var celsius = regexp.MustCompile(`(?m)^\s*(paris|oslo): "?(-?\d+)°C`)

// next plays the script: look up both cities, keep each temperature in the
// scratchpad, then answer from the scratchpad, which survives any pruning
// of the conversation.
func (s *scriptedModel) next(turn int, msgs []wireMessage) (text, tool, args string) {
	task := ""
	for _, m := range msgs {
		if m.Role == "user" {
			task = fmt.Sprint(m.Content)
			break
		}
	}
	if !strings.Contains(strings.ToLower(task), "weather") {
		return "I can only demonstrate the weather task offline.", "final_answer", `{"answer":"The scripted model only knows the weather task; set AGENTMEM_LLM_BASE_URL for a real model."}`
	}
	switch turn {
	case 1:
		return "First, Paris.", "get_weather", `{"city":"Paris"}`
	case 2:
		return "Remember the Paris temperature.", "scratchpad_store", `{"key":"paris","value":"18°C"}`
	case 3:
		return "Now Oslo.", "get_weather", `{"city":"Oslo"}`
	case 4:
		return "Remember the Oslo temperature.", "scratchpad_store", `{"key":"oslo","value":"9°C"}`
	case 5:
		return "Check a city without a station, to see an error handled.", "get_weather", `{"city":"Atlantis"}`
	}
	// Answer from the scratchpad note the agent sends along.
	temps := map[string]string{}
	for _, m := range msgs {
		if m.Role == "system" {
			for _, g := range celsius.FindAllStringSubmatch(fmt.Sprint(m.Content), -1) {
				temps[g[1]] = g[2]
			}
		}
	}
	if temps["paris"] == "" || temps["oslo"] == "" {
		return "", "final_answer", `{"answer":"I lost track of the temperatures."}`
	}
	answer := fmt.Sprintf("Paris is warmer: %s°C against %s°C in Oslo.", temps["paris"], temps["oslo"])
	return "Both temperatures are in my scratchpad.", "final_answer", fmt.Sprintf(`{"answer":%q}`, answer)
}

// validConversation applies OpenAI's rules on tool messages.
func validConversation(msgs []wireMessage) error {
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
			return fmt.Errorf("messages[%d]: tool calls %v have no tool message", i, keys(open))
		}
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("tool calls %v have no tool message", keys(open))
	}
	return nil
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func apiError(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}
