package proxy_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/proxy/proxytest"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/sessions"
)

// TestToolResultImages: a screenshot tool's result, an Anthropic
// tool_result block holding an image, is recorded with its result
// (ToolResult.Images), reaches the upstream in its tool_result block, and
// is recognised when the history is sent again. Through the OpenAI
// route, whose API takes no image in a tool message, a tool message with
// an image_url part (agentmem's extension) is recorded alike and reaches
// the upstream as OpenAI takes it: described in the tool message and
// shown in a user message after it.
func TestToolResultImages(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Script = func(string, int, []any) proxytest.Reply { return proxytest.Reply{Text: "a login form"} }
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	ah := []any{
		map[string]any{"role": "user", "content": "What does the page show?"},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "c1", "name": "screenshot", "input": map[string]any{}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "c1", "content": []any{
			map[string]any{"type": "text", "text": "the page"},
			map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": png}},
		}}}},
	}
	hdr := map[string]string{proxy.HeaderSession: "shot-a"}
	r := e.post(t, "/v1/messages", hdr, map[string]any{"model": "claude-x", "max_tokens": 10, "messages": ah})
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	sent := string(e.up.Received()[0].Body)
	if want := `{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":"the page"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}}],"is_error":false}`; !strings.Contains(sent, want) {
		t.Errorf("the upstream got %s\nwithout %s", sent, want)
	}
	msgs, err := proxytest.AnthropicMessages(e.up.Received()[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := render.Validate(render.NameAnthropic, msgs); err != nil {
		t.Errorf("the upstream got an invalid request: %v", err)
	}
	h, err := e.svc.History(context.Background(), sessions.HistoryRequest{SessionID: "shot-a"})
	if err != nil {
		t.Fatal(err)
	}
	var shots int
	for _, s := range h.Steps {
		if a, ok := s.(*agentmem.ActionStep); ok {
			for _, res := range a.Results {
				shots += len(res.Images)
			}
		}
	}
	if shots != 1 {
		t.Errorf("the session holds %d images in tool results: %+v", shots, h.Steps)
	}
	var resp struct {
		Content []any `json:"content"`
	}
	_ = json.Unmarshal(r.body, &resp)
	ah = append(ah, map[string]any{"role": "assistant", "content": resp.Content}, map[string]any{"role": "user", "content": "Log in."})
	indented, _ := json.MarshalIndent(map[string]any{"model": "claude-x", "max_tokens": 10, "messages": ah}, "", " ")
	r = e.post(t, "/v1/messages", hdr, indented)
	if r.status != 200 || r.header.Get(proxy.HeaderHistory) != "continuation" || r.header.Get(proxy.HeaderAppended) != "1" {
		t.Errorf("the Anthropic history with a screenshot: %d %v", r.status, r.header)
	}

	// OpenAI.
	oh := []any{
		map[string]any{"role": "user", "content": "What does the page show?"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "screenshot", "arguments": "{}"}}}},
		map[string]any{"role": "tool", "tool_call_id": "c1", "content": []any{
			map[string]any{"type": "text", "text": "the page"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + png}},
		}},
	}
	ohdr := map[string]string{proxy.HeaderSession: "shot-o"}
	r = e.post(t, "/v1/chat/completions", ohdr, map[string]any{"model": "gpt-4o", "messages": oh})
	reply, _ := openAIReply(t, r, false)
	var body struct {
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(e.up.Received()[2].Body, &body); err != nil {
		t.Fatal(err)
	}
	got, err := render.DecodeOpenAIMessages(body.Messages)
	if err != nil {
		t.Fatal(err)
	}
	if err := render.Validate(render.NameOpenAI, got); err != nil {
		t.Errorf("the upstream got an invalid request: %v\n%s", err, body.Messages)
	}
	if n := len(got); n != 4 || got[2].Text() != "the page\n[image: image/png, 70 B]" || got[3].Role != agentmem.RoleUser || len(got[3].Content) != 2 || got[3].Content[1].Image == nil {
		t.Errorf("the upstream got %s", body.Messages)
	}
	oh = append(oh, reply, map[string]any{"role": "user", "content": "Log in."})
	indented, _ = json.MarshalIndent(map[string]any{"model": "gpt-4o", "messages": oh}, "", " ")
	r = e.post(t, "/v1/chat/completions", ohdr, indented)
	if r.status != 200 || r.header.Get(proxy.HeaderHistory) != "continuation" || r.header.Get(proxy.HeaderAppended) != "1" {
		t.Errorf("the OpenAI history with a screenshot: %d %v", r.status, r.header)
	}
}
