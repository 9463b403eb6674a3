package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/store"
)

// chatRequest is a chat completion request of a system prompt and n
// turns (a question and a long answer), then one more question.
func chatRequest(n int) map[string]any {
	msgs := []any{map[string]any{"role": "system", "content": "You are terse."}}
	for i := range n {
		msgs = append(msgs,
			map[string]any{"role": "user", "content": fmt.Sprintf("Q%d: what is the weather in city %d?", i, i)},
			map[string]any{"role": "assistant", "content": fmt.Sprintf("A%d: ", i) + strings.Repeat("mild and dry ", 30)})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": "And tomorrow?"})
	return map[string]any{"model": "gpt-4o", "messages": msgs}
}

// TestSessionSettings: the request that creates a session gives it the
// pinning of X-Agentmem-Pinning (a chat's, the system prompts and the
// summary, without it) and the automatic compaction of
// X-Agentmem-Auto-Compact; later requests do not change them. The
// context sent pins what the session pins: a chat's first question
// leaves it under a small budget, unless the session pins it.
func TestSessionSettings(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	sentQ0 := func(i int) bool {
		return strings.Contains(string(e.up.Received()[i].Body), "Q0:")
	}
	r := e.post(t, "/v1/chat/completions", map[string]string{proxy.HeaderSession: "chat", proxy.HeaderBudget: "500"}, chatRequest(8))
	if r.status != 200 || sentQ0(0) {
		t.Fatalf("a chat: %d %s; the first question sent: %v", r.status, r.body, sentQ0(0))
	}
	s, err := e.svc.Get(ctx, "", "chat")
	if err != nil || s.Pinning == nil || *s.Pinning != agentmem.ChatPinning || s.AutoCompact != nil {
		t.Fatalf("a session the proxy created: %+v, %v", s, err)
	}
	hdr := map[string]string{proxy.HeaderSession: "run", proxy.HeaderBudget: "500",
		proxy.HeaderPinning: `{"system_prompts":true,"first_task":true}`, proxy.HeaderAutoCompact: `{"max_tokens":6000,"keep_recent":4}`}
	if r := e.post(t, "/v1/chat/completions", hdr, chatRequest(8)); r.status != 200 || !sentQ0(1) {
		t.Fatalf("a session pinning its first task: %d %s; the first question sent: %v", r.status, r.body, sentQ0(1))
	}
	want := store.AutoCompact{MaxTokens: 6000, TargetTokens: 3000, KeepRecent: 4, Summarizer: store.SummarizerExtractive}
	s, err = e.svc.Get(ctx, "", "run")
	if err != nil || *s.Pinning != (agentmem.Pinning{SystemPrompts: true, FirstTask: true}) || s.AutoCompact == nil || *s.AutoCompact != want {
		t.Fatalf("a session created with settings: %+v, %v", s, err)
	}
	// An existing session keeps its settings.
	hdr[proxy.HeaderPinning], hdr[proxy.HeaderAutoCompact] = `{}`, `{"max_tokens":10}`
	if r := e.post(t, "/v1/chat/completions", hdr, chatRequest(8)); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if s, _ = e.svc.Get(ctx, "", "run"); *s.Pinning != (agentmem.Pinning{SystemPrompts: true, FirstTask: true}) || *s.AutoCompact != want {
		t.Fatalf("settings of later requests changed the session: %+v", s)
	}
}

// TestSessionSettingsBadHeaders: bad settings headers are 400 naming the
// header, and create no session.
func TestSessionSettingsBadHeaders(t *testing.T) {
	e := newEnv(t, nil)
	for _, c := range []struct{ header, value, says string }{
		{proxy.HeaderPinning, `{"system_prompts":"yes"}`, "system_prompts"},
		{proxy.HeaderPinning, `{"everything":true}`, "everything"},
		{proxy.HeaderPinning, `null`, "JSON object"},
		{proxy.HeaderPinning, `{"system_prompts":true`, ""},
		{proxy.HeaderAutoCompact, `{"max_tokens":0}`, "max_tokens"},
		{proxy.HeaderAutoCompact, `{"max_tokens":100,"target_tokens":200}`, "target_tokens"},
		{proxy.HeaderAutoCompact, `{"max_tokens":100,"summarizer":"llm"}`, "summarizer"},
	} {
		r := e.post(t, "/v1/chat/completions", map[string]string{proxy.HeaderSession: "s", c.header: c.value}, chatRequest(1))
		var body api.ErrorBody
		_ = json.Unmarshal(r.body, &body)
		if r.status != 400 || body.Error.Field != c.header || !strings.Contains(body.Error.Message, c.says) {
			t.Errorf("%s: %s: %d %s", c.header, c.value, r.status, r.body)
		}
		if _, err := e.svc.Get(context.Background(), "", "s"); err == nil {
			t.Fatalf("%s: %s created the session", c.header, c.value)
		}
	}
}
