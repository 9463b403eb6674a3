package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// newTestClient starts srv-backed client with fast, recorded backoff.
func newTestClient(t *testing.T, h http.HandlerFunc, cfg Config) (*Client, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	if cfg.BaseURL == "" {
		cfg.BaseURL = srv.URL + "/v1"
	}
	if cfg.Model == "" {
		cfg.Model = "test-model"
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.backoffBase = 0
	return c, srv
}

func writeJSON(t *testing.T, w http.ResponseWriter, status int, body string) {
	t.Helper()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if _, err := io.WriteString(w, body); err != nil {
		t.Errorf("write response: %v", err)
	}
}

const okChat = `{"id":"chatcmpl-1","object":"chat.completion","model":"test-model-2024",
 "choices":[{"index":0,"message":{"role":"assistant","content":"hi there"},"finish_reason":"stop"}],
 "usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`

func TestChatRequestShape(t *testing.T) {
	var got map[string]any
	var hdr http.Header
	var path, method string
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		method, path, hdr = r.Method, r.URL.Path, r.Header.Clone()
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Errorf("decode request: %v", err)
		}
		writeJSON(t, w, 200, okChat)
	}, Config{APIKey: "sk-test", UserAgent: "agentmem-test/0", Model: "default-model"})

	temp := 0.0
	params := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)
	resp, err := c.Chat(context.Background(), ChatRequest{
		Model: "gpt-test",
		Messages: []Message{
			{Role: "system", Content: TextContent("be brief")},
			{Role: "user", Content: PartsContent(TextPart("what is this?"), ImagePart("https://x/img.png", "low"))},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Function: FunctionCall{Name: "search", Arguments: `{"q":"go"}`}}}},
			{Role: "tool", ToolCallID: "call_1", Content: TextContent("result")},
		},
		Tools:       []Tool{{Function: FunctionDef{Name: "search", Description: "web search", Parameters: params}}},
		ToolChoice:  "auto",
		Temperature: &temp,
		MaxTokens:   64,
		JSONMode:    true,
		Stop:        []string{"\n\n"},
	})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if method != http.MethodPost || path != "/v1/chat/completions" {
		t.Errorf("request = %s %s, want POST /v1/chat/completions", method, path)
	}
	if a := hdr.Get("Authorization"); a != "Bearer sk-test" {
		t.Errorf("Authorization = %q", a)
	}
	if ct := hdr.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if ua := hdr.Get("User-Agent"); ua != "agentmem-test/0" {
		t.Errorf("User-Agent = %q", ua)
	}

	want := map[string]any{
		"model": "gpt-test",
		"messages": []any{
			map[string]any{"role": "system", "content": "be brief"},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "what is this?"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://x/img.png", "detail": "low"}},
			}},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
				map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "search", "arguments": `{"q":"go"}`}},
			}},
			map[string]any{"role": "tool", "content": "result", "tool_call_id": "call_1"},
		},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{
			"name": "search", "description": "web search",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "required": []any{"q"}},
		}}},
		"tool_choice":     "auto",
		"temperature":     0.0,
		"max_tokens":      64.0,
		"response_format": map[string]any{"type": "json_object"},
		"stop":            []any{"\n\n"},
	}
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.MarshalIndent(got, "", " ")
		wj, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("request body:\n%s\nwant:\n%s", gj, wj)
	}

	wantResp := &ChatResponse{
		ID: "chatcmpl-1", Model: "test-model-2024", FinishReason: "stop",
		Message: Message{Role: "assistant", Content: TextContent("hi there")},
		Usage:   Usage{PromptTokens: 12, CompletionTokens: 3, TotalTokens: 15},
	}
	if !reflect.DeepEqual(resp, wantResp) {
		t.Errorf("response = %+v, want %+v", resp, wantResp)
	}
}

func TestChatMinimalRequestOmitsOptionalFields(t *testing.T) {
	var got map[string]any
	var hdr http.Header
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		hdr = r.Header.Clone()
		_ = json.NewDecoder(r.Body).Decode(&got)
		writeJSON(t, w, 200, okChat)
	}, Config{Model: "default-model"})
	if _, err := c.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: "user", Content: TextContent("x")}}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"model": "default-model", "messages": []any{map[string]any{"role": "user", "content": "x"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("body = %v, want %v", got, want)
	}
	if a, ok := hdr["Authorization"]; ok {
		t.Errorf("Authorization sent without APIKey: %q", a)
	}
	if ua := hdr.Get("User-Agent"); ua != DefaultUserAgent {
		t.Errorf("User-Agent = %q, want %q", ua, DefaultUserAgent)
	}
}

func TestChatToolChoiceFunctionName(t *testing.T) {
	var got map[string]json.RawMessage
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&got)
		writeJSON(t, w, 200, okChat)
	}, Config{})
	_, err := c.Chat(context.Background(), ChatRequest{
		Messages:   []Message{{Role: "user", Content: TextContent("x")}},
		Tools:      []Tool{NewTool("lookup", "", nil)},
		ToolChoice: "lookup",
	})
	if err != nil {
		t.Fatal(err)
	}
	if tc := string(got["tool_choice"]); tc != `{"type":"function","function":{"name":"lookup"}}` {
		t.Errorf("tool_choice = %s", tc)
	}
	if tools := string(got["tools"]); tools != `[{"type":"function","function":{"name":"lookup"}}]` {
		t.Errorf("tools = %s", tools)
	}
}

func TestChatToolCallResponse(t *testing.T) {
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(t, w, 200, `{"id":"x","model":"m","choices":[{"index":0,"finish_reason":"tool_calls",
		 "message":{"role":"assistant","content":null,"tool_calls":[
		  {"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
		  {"id":"call_b","type":"function","function":{"name":"get_time","arguments":{"tz": "UTC"}}}]}}]}`)
	}, Config{})
	resp, err := c.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: "user", Content: TextContent("weather?")}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != "tool_calls" {
		t.Errorf("FinishReason = %q", resp.FinishReason)
	}
	if !resp.Message.Content.IsZero() {
		t.Errorf("Content = %+v, want zero", resp.Message.Content)
	}
	want := []ToolCall{
		{ID: "call_a", Type: "function", Function: FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}},
		{ID: "call_b", Type: "function", Function: FunctionCall{Name: "get_time", Arguments: `{"tz":"UTC"}`}},
	}
	if !reflect.DeepEqual(resp.Message.ToolCalls, want) {
		t.Errorf("ToolCalls = %+v, want %+v", resp.Message.ToolCalls, want)
	}
	// The reply can be sent back as is: content null, tool calls kept.
	b, err := json.Marshal(resp.Message)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"role":"assistant","content":null,"tool_calls":[`) {
		t.Errorf("re-encoded reply = %s", b)
	}
}

func TestChatResponseContentForms(t *testing.T) {
	tests := []struct {
		name, content string
		want          Content
		wantText      string
	}{
		{"string", `"hello"`, TextContent("hello"), "hello"},
		{"null", `null`, Content{}, ""},
		{"parts", `[{"type":"text","text":"a"},{"type":"text","text":"b"}]`, PartsContent(TextPart("a"), TextPart("b")), "a\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
				writeJSON(t, w, 200, `{"choices":[{"message":{"content":`+tt.content+`},"finish_reason":"stop"}]}`)
			}, Config{})
			resp, err := c.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: "user", Content: TextContent("x")}}})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(resp.Message.Content, tt.want) {
				t.Errorf("Content = %#v, want %#v", resp.Message.Content, tt.want)
			}
			if s := resp.Message.Content.String(); s != tt.wantText {
				t.Errorf("String() = %q, want %q", s, tt.wantText)
			}
			if resp.Message.Role != "assistant" {
				t.Errorf("Role = %q, want assistant filled in", resp.Message.Role)
			}
		})
	}
}

func TestChatEmptyResponse(t *testing.T) {
	var calls atomic.Int32
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		writeJSON(t, w, 200, `{"id":"x","choices":[]}`)
	}, Config{})
	_, err := c.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: "user", Content: TextContent("x")}}})
	if !errors.Is(err, ErrEmptyResponse) {
		t.Fatalf("err = %v, want ErrEmptyResponse", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("calls = %d, want 1 (no retry)", n)
	}
}

func TestChatErrorIn200(t *testing.T) {
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(t, w, 200, `{"error":{"message":"model overloaded","type":"server_error","code":503}}`)
	}, Config{})
	_, err := c.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: "user", Content: TextContent("x")}}})
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *APIError", err)
	}
	if apiErr.StatusCode != 200 || apiErr.Message != "model overloaded" || apiErr.Type != "server_error" || apiErr.Code != "503" {
		t.Errorf("APIError = %+v", apiErr)
	}
}

func TestChatMalformedResponse(t *testing.T) {
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html>gateway login</html>")
	}, Config{})
	_, err := c.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: "user", Content: TextContent("x")}}})
	if !errors.Is(err, ErrMalformedResponse) {
		t.Fatalf("err = %v, want ErrMalformedResponse", err)
	}
	var syn *json.SyntaxError
	if !errors.As(err, &syn) {
		t.Errorf("err does not wrap the JSON error: %v", err)
	}
	for _, s := range []string{"chat/completions", "text/html", "gateway login"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("err %q does not mention %q", err, s)
		}
	}
}

func TestChatResponseTooLarge(t *testing.T) {
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(t, w, 200, okChat)
	}, Config{})
	c.maxBody = 64
	_, err := c.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: "user", Content: TextContent("x")}}})
	if !errors.Is(err, ErrMalformedResponse) || !strings.Contains(err.Error(), "exceeds 64 bytes") {
		t.Fatalf("err = %v, want size-limit error", err)
	}
}

func TestChatValidation(t *testing.T) {
	c, err := New(Config{BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: "user", Content: TextContent("x")}}})
	if !errors.Is(err, ErrConfig) {
		t.Errorf("no model: err = %v, want ErrConfig", err)
	}
	_, err = c.Chat(context.Background(), ChatRequest{Model: "m"})
	if err == nil || !strings.Contains(err.Error(), "no messages") {
		t.Errorf("no messages: err = %v", err)
	}
}

func TestChatConcurrent(t *testing.T) {
	// Each distinct request fails once with a 500, then succeeds.
	var mu sync.Mutex
	seen := map[string]bool{}
	var calls atomic.Int32
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		first := !seen[string(body)]
		seen[string(body)] = true
		mu.Unlock()
		if first {
			writeJSON(t, w, 500, `{"error":{"message":"flaky"}}`)
			return
		}
		writeJSON(t, w, 200, okChat)
	}, Config{})
	const n = 16
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := c.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: "user", Content: TextContent(fmt.Sprint("q", i))}}})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := calls.Load(); got != 2*n {
		t.Errorf("calls = %d, want %d", got, 2*n)
	}
}
