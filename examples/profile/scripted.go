package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
)

// scriptedModel is a tiny OpenAI-compatible chat endpoint that plays the
// example's part of a model, so that it runs offline through the real
// HTTP client. It keeps no state between requests: like a real model it
// knows only what each request sends, so what it knows of the user across
// sessions is what the memory block in the system prompt says. Like a
// real API it refuses a conversation whose tool messages do not answer
// the calls before them, with HTTP 400.
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
		Messages []wireMessage `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		apiError(w, "invalid JSON: "+err.Error())
		return
	}
	if err := validConversation(req.Messages); err != nil {
		apiError(w, err.Error())
		return
	}
	s.mu.Lock()
	s.turn++
	turn := s.turn
	s.mu.Unlock()
	text, name, args := next(req.Messages)
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
	})
}

var (
	// humanBlock finds the human block in the system prompt, as
	// blocks.Render shows it.
	humanBlock = regexp.MustCompile(`(?s)<human chars="\d+/\d+">\n(.*?)</human>`)
	introduces = regexp.MustCompile(`(?i)\b(?:I'm|I am|my name is)\s+([A-Z][a-z]+)`)
	prefers    = regexp.MustCompile(`(?i)\bI prefer (.+?)[.!]*$`)
	nameLine   = regexp.MustCompile(`(?m)^Name: (\w+)\.$`)
	prefLine   = regexp.MustCompile(`(?m)^Prefers (.+)\.$`)
)

// next plays the model: on a user's message, record their name or a
// preference in the block (memory_append, memory_rethink) or answer a
// question from it; after a tool's result, answer.
func next(msgs []wireMessage) (text, tool, args string) {
	system, block := "", ""
	if len(msgs) > 0 && msgs[0].Role == "system" {
		system = content(msgs[0])
	}
	if m := humanBlock.FindStringSubmatch(system); m != nil {
		block = strings.TrimSuffix(m[1], "\n")
	}
	last := msgs[len(msgs)-1]
	if last.Role == "tool" {
		result := content(last)
		if strings.HasPrefix(result, "error:") {
			return "I could not note that: " + result, "", ""
		}
		if m := nameLine.FindStringSubmatch(block); m != nil && !prefLine.MatchString(block) {
			return fmt.Sprintf("Nice to meet you, %s! I will remember your name.", m[1]), "", ""
		}
		return "Noted: I will keep that in mind.", "", ""
	}
	said := content(last)
	switch {
	case introduces.MatchString(said):
		name := introduces.FindStringSubmatch(said)[1]
		if strings.Contains(block, "Name: "+name+".") {
			return fmt.Sprintf("Welcome back, %s!", name), "", ""
		}
		a, _ := json.Marshal(map[string]string{"label": "human", "text": "Name: " + name + "."})
		return "I will note your name.", "memory_append", string(a)
	case prefers.MatchString(said):
		// Rewrite the block whole, from what it says now, to keep it
		// tidy: one line per thing known.
		value := strings.TrimSpace(block + "\nPrefers " + prefers.FindStringSubmatch(said)[1] + ".")
		a, _ := json.Marshal(map[string]string{"label": "human", "value": value})
		return "I will note your preference.", "memory_rethink", string(a)
	case strings.Contains(strings.ToLower(said), "my name"):
		name := nameLine.FindStringSubmatch(block)
		if name == nil {
			return "I don't know your name yet: you haven't told me.", "", ""
		}
		answer := "You are " + name[1]
		if pref := prefLine.FindStringSubmatch(block); pref != nil {
			answer += ", and you prefer " + pref[1] + ": take the train to Lisbon."
		} else {
			answer += "; I don't know how you like to travel."
		}
		return answer, "", ""
	}
	return "How can I help?", "", ""
}

// content returns a message's text, whether it came as a string or as
// parts.
func content(m wireMessage) string {
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
			return fmt.Errorf("messages[%d]: tool calls have no tool message", i)
		}
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("tool calls have no tool message")
	}
	return nil
}

func apiError(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}
