package proxy_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/proxy"
)

// TestProxySendsWholeTurns is the reproduction through the proxy:
// a chat of ten turns, each a question, the model's tool call, a long
// tool result and its answer, sent by an unmodified OpenAI-style client
// at X-Agentmem-Budget 3000. No request reaches the provider with a tool
// result whose question it does not hold, and each holds the newest
// question.
func TestProxySendsWholeTurns(t *testing.T) {
	e := newEnv(t, nil)
	headers := map[string]string{proxy.HeaderSession: "whole-turns", proxy.HeaderBudget: "3000"}
	history := []map[string]any{{"role": "system", "content": "You answer questions about the weather."}}
	for i := range 10 {
		history = append(history, map[string]any{"role": "user", "content": fmt.Sprintf("Q%d: what is the weather in city %d?", i, i)})
		for range 3 {
			r := e.post(t, "/v1/chat/completions", headers, map[string]any{"model": "gpt-4o", "messages": history})
			if r.status != 200 {
				t.Fatalf("turn %d: %d %s", i, r.status, r.body)
			}
			var reply struct {
				Choices []struct {
					Message map[string]any `json:"message"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(r.body, &reply); err != nil {
				t.Fatal(err)
			}
			msg := reply.Choices[0].Message
			history = append(history, msg)
			calls, _ := msg["tool_calls"].([]any)
			if len(calls) == 0 {
				break
			}
			for _, c := range calls {
				id := c.(map[string]any)["id"].(string)
				history = append(history, map[string]any{"role": "tool", "tool_call_id": id,
					"content": strings.Repeat(fmt.Sprintf("city %d forecast: mild, 14 degrees, light wind. ", i), 250)})
			}
		}
	}
	question := regexp.MustCompile(`^Q(\d+):`)
	result := regexp.MustCompile(`^city (\d+) forecast`)
	received := e.up.Received()
	if len(received) < 10 {
		t.Fatalf("%d requests reached the upstream", len(received))
	}
	dropped := 0 // requests without the first question: the budget bit
	for n, rec := range received {
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(rec.Body, &body); err != nil {
			t.Fatal(err)
		}
		asked, answered := map[string]bool{}, map[string]bool{}
		newest := ""
		for _, m := range body.Messages {
			text, _ := m.Content.(string)
			if q := question.FindStringSubmatch(text); q != nil && m.Role == "user" {
				asked[q[1]], newest = true, q[1]
			}
			if r := result.FindStringSubmatch(text); r != nil && m.Role == "tool" {
				answered[r[1]] = true
			}
		}
		for city := range answered {
			if !asked[city] {
				t.Fatalf("request %d holds the tool result of city %s without its question Q%s: %s", n, city, city, rec.Body[:min(len(rec.Body), 600)])
			}
		}
		if newest == "" {
			t.Fatalf("request %d holds no question", n)
		}
		if !asked["0"] {
			dropped++
		}
	}
	if dropped == 0 {
		t.Fatal("every request held the whole chat: the budget never made the proxy drop a turn")
	}
}
