package proxy_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/proxy/proxytest"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/store"
)

const (
	systemPrompt = "You are a careful research agent. Use the lookup tool."
	firstTask    = "Find out everything about the history of the transistor."
)

// bigResult is a large tool result.
func bigResult(n int) string {
	return strings.Repeat(fmt.Sprintf("Result line %d of the lookup: some long text about transistors. ", n), 60)
}

var lookupTool = []any{map[string]any{"type": "function", "function": map[string]any{"name": "lookup", "description": "Looks things up.",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}, "limit": map[string]any{"type": "integer"}}}}}}

// openAIReply reads a completion, whole or streamed, as a client does: the
// assistant message to append to the history, and its text.
func openAIReply(t *testing.T, r response, stream bool) (map[string]any, string) {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if !stream {
		var resp struct {
			Choices []struct {
				Message map[string]any `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(r.body, &resp); err != nil {
			t.Fatal(err)
		}
		m := resp.Choices[0].Message
		text, _ := m["content"].(string)
		return m, text
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("a stream answered %q", ct)
	}
	_, data := events(t, r.body)
	if len(data) == 0 || string(data[len(data)-1]) != "[DONE]" {
		t.Fatalf("the stream does not end with [DONE]: %s", r.body)
	}
	var text strings.Builder
	type call struct{ id, name, args string }
	var calls []*call
	for _, d := range data[:len(data)-1] {
		var c struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(d, &c); err != nil {
			t.Fatal(err)
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
			for _, tc := range ch.Delta.ToolCalls {
				for len(calls) <= tc.Index {
					calls = append(calls, &call{})
				}
				if tc.ID != "" {
					calls[tc.Index].id = tc.ID
				}
				if tc.Function.Name != "" {
					calls[tc.Index].name = tc.Function.Name
				}
				calls[tc.Index].args += tc.Function.Arguments
			}
		}
	}
	m := map[string]any{"role": "assistant", "content": text.String()}
	if len(calls) > 0 {
		var tcs []any
		for _, c := range calls {
			tcs = append(tcs, map[string]any{"id": c.id, "type": "function", "function": map[string]any{"name": c.name, "arguments": c.args}})
		}
		m["tool_calls"] = tcs
		if text.Len() == 0 {
			m["content"] = nil
		}
	}
	return m, text.String()
}

// TestOpenAIConversation: a 30-request tool-using conversation whose tool
// results are large, resending its whole history each time, streamed and
// not, in a session that pins its first task (an agent run: see
// X-Agentmem-Pinning): every body the upstream received fits the budget
// (the exact tokenizer), keeps the system prompt and the first task,
// answers every tool call; the session holds every message exactly once;
// the streamed text is the upstream's; the other members of the request
// reach the upstream as they were sent.
func TestOpenAIConversation(t *testing.T) {
	e := newEnv(t, nil)
	const budget = 3000
	history := []any{
		map[string]any{"role": "system", "content": systemPrompt},
		map[string]any{"role": "user", "content": firstTask},
	}
	hdr := map[string]string{proxy.HeaderSession: "conv-1", proxy.HeaderBudget: strconv.Itoa(budget),
		proxy.HeaderPinning: `{"system_prompts":true,"first_task":true,"summary":true}`}
	dropped := 0
	for n := range 30 {
		stream := n%2 == 1
		body := map[string]any{"model": "gpt-4o", "messages": history, "tools": lookupTool, "temperature": 0.2, "stream": stream,
			"metadata": map[string]any{"turn": strconv.Itoa(n)}}
		r := e.post(t, "/v1/chat/completions", hdr, body)
		msg, text := openAIReply(t, r, stream)
		if got := e.up.Replies()[n].Text; text != got {
			t.Fatalf("request %d: the client got %q, the upstream said %q", n, text, got)
		}
		if r.header.Get("X-Request-Id") != fmt.Sprintf("req_%d", n) {
			t.Errorf("request %d: the upstream's headers were not relayed: %v", n, r.header)
		}
		tokens, _ := strconv.Atoi(r.header.Get(proxy.HeaderContextTokens))
		d, _ := strconv.Atoi(r.header.Get(proxy.HeaderStepsDropped))
		dropped = max(dropped, d)
		// What the upstream received.
		got := e.up.Received()[n]
		var sent map[string]json.RawMessage
		if err := json.Unmarshal(got.Body, &sent); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"model", "tools", "temperature", "stream", "metadata"} {
			if wire(t, body[k]) != string(sent[k]) {
				t.Errorf("request %d: %s reached the upstream as %s, not %s", n, k, sent[k], wire(t, body[k]))
			}
		}
		if cost, err := proxytest.Check(got, budget, o200k(t), systemPrompt, firstTask); err != nil || cost != tokens {
			t.Errorf("request %d: %v; the messages cost %d tokens, the header says %d", n, err, cost, tokens)
		}
		history = append(history, msg)
		if calls, _ := msg["tool_calls"].([]any); len(calls) > 0 {
			for _, c := range calls {
				id := c.(map[string]any)["id"].(string)
				history = append(history, map[string]any{"role": "tool", "tool_call_id": id, "content": bigResult(n)})
			}
		} else {
			history = append(history, map[string]any{"role": "user", "content": fmt.Sprintf("Good. Now question %d.", n)})
		}
	}
	if dropped == 0 {
		t.Error("the budget never dropped a step: the test does not test fitting")
	}
	// The session holds every message once: the history but its last
	// message, which no request has sent yet.
	if got, want := wire(t, e.held(t, "conv-1")), wire(t, canonicalOpenAI(t, history[:len(history)-1])); got != want {
		t.Errorf("the session holds\n%s\nthe client's history is\n%s", got, want)
	}
}

// TestAnthropicConversation is TestOpenAIConversation for the Messages
// API (system apart, tool_use and tool_result blocks, streaming events),
// in a session of the proxy's default pinning, a chat's: the system
// prompt is kept, the first question need not be.
func TestAnthropicConversation(t *testing.T) {
	e := newEnv(t, nil)
	const budget = 3000
	var history []any
	history = append(history, map[string]any{"role": "user", "content": firstTask})
	hdr := map[string]string{proxy.HeaderSession: "conv-a", proxy.HeaderBudget: strconv.Itoa(budget), "anthropic-version": "2023-06-01"}
	tools := []any{map[string]any{"name": "lookup", "description": "Looks things up.", "input_schema": map[string]any{"type": "object"}}}
	dropped := 0
	for n := range 30 {
		stream := n%2 == 0
		body := map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": systemPrompt, "messages": history, "tools": tools, "stream": stream}
		r := e.post(t, "/v1/messages", hdr, body)
		if r.status != 200 {
			t.Fatalf("request %d: %d %s", n, r.status, r.body)
		}
		var content []any
		var text strings.Builder
		if !stream {
			var resp struct {
				Content []any `json:"content"`
			}
			if err := json.Unmarshal(r.body, &resp); err != nil {
				t.Fatal(err)
			}
			content = resp.Content
			for _, b := range content {
				if m := b.(map[string]any); m["type"] == "text" {
					text.WriteString(m["text"].(string))
				}
			}
		} else {
			names, data := events(t, r.body)
			if names[len(names)-1] != "message_stop" {
				t.Fatalf("request %d: the stream ends with %q", n, names[len(names)-1])
			}
			var cur map[string]any
			var args strings.Builder
			for i, name := range names {
				var ev map[string]any
				if err := json.Unmarshal(data[i], &ev); err != nil {
					t.Fatal(err)
				}
				switch name {
				case "content_block_start":
					cur = ev["content_block"].(map[string]any)
					args.Reset()
				case "content_block_delta":
					d := ev["delta"].(map[string]any)
					if d["type"] == "text_delta" {
						cur["text"] = cur["text"].(string) + d["text"].(string)
						text.WriteString(d["text"].(string))
					} else {
						args.WriteString(d["partial_json"].(string))
					}
				case "content_block_stop":
					if cur["type"] == "tool_use" {
						var in any
						if err := json.Unmarshal([]byte(args.String()), &in); err != nil {
							t.Fatal(err)
						}
						cur["input"] = in
					}
					content = append(content, cur)
				}
			}
		}
		if got := e.up.Replies()[n].Text; text.String() != got {
			t.Fatalf("request %d: the client got %q, the upstream said %q", n, text.String(), got)
		}
		d, _ := strconv.Atoi(r.header.Get(proxy.HeaderStepsDropped))
		dropped = max(dropped, d)
		got := e.up.Received()[n]
		if got.Header.Get("Anthropic-Version") != "2023-06-01" {
			t.Errorf("request %d: anthropic-version was not forwarded", n)
		}
		var sent map[string]json.RawMessage
		if err := json.Unmarshal(got.Body, &sent); err != nil {
			t.Fatal(err)
		}
		if string(sent["tools"]) != wire(t, tools) || string(sent["max_tokens"]) != "1024" {
			t.Errorf("request %d: the other members were changed: %s", n, got.Body)
		}
		if string(sent["system"]) != wire(t, systemPrompt) {
			t.Errorf("request %d: system %s", n, sent["system"])
		}
		tokens, _ := strconv.Atoi(r.header.Get(proxy.HeaderContextTokens))
		if cost, err := proxytest.Check(got, budget, o200k(t), systemPrompt, ""); err != nil || cost != tokens {
			t.Errorf("request %d: %v; the messages cost %d tokens, the header says %d", n, err, cost, tokens)
		}
		history = append(history, map[string]any{"role": "assistant", "content": content})
		var results []any
		for _, b := range content {
			if m := b.(map[string]any); m["type"] == "tool_use" {
				results = append(results, map[string]any{"type": "tool_result", "tool_use_id": m["id"], "content": bigResult(n)})
			}
		}
		if len(results) > 0 {
			history = append(history, map[string]any{"role": "user", "content": results})
		} else {
			history = append(history, map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("Now question %d.", n)}}})
		}
	}
	if dropped == 0 {
		t.Error("the budget never dropped a step")
	}
	// The session holds every message once.
	body := map[string]any{"system": systemPrompt, "messages": history[:len(history)-1]}
	want := anthropicCanonical(t, body)
	if got := wire(t, e.held(t, "conv-a")); got != wire(t, want) {
		t.Errorf("the session holds\n%s\nthe client's history is\n%s", got, wire(t, want))
	}
}

// anthropicCanonical converts an Anthropic request body to canonical
// messages in OpenAI wire form, as the proxy reads it.
func anthropicCanonical(t *testing.T, body any) []render.OpenAIMessage {
	t.Helper()
	msgs, err := proxy.DecodeAnthropicRequest([]byte(wire(t, body)))
	if err != nil {
		t.Fatal(err)
	}
	return render.OpenAIRequest(msgs)
}

// TestRetryAppendsNothingTwice: a request sent again, before and after
// its reply was recorded, whole history or new messages only, leaves the
// session with one copy of each message.
func TestRetryAppendsNothingTwice(t *testing.T) {
	e := newEnv(t, nil)
	hdr := map[string]string{proxy.HeaderSession: "retry"}
	history := []any{map[string]any{"role": "system", "content": systemPrompt}, map[string]any{"role": "user", "content": firstTask}}
	body := map[string]any{"model": "gpt-4o", "messages": history}
	r1 := e.post(t, "/v1/chat/completions", hdr, body)
	reply1, _ := openAIReply(t, r1, false)
	// The same request again: the reply was recorded, so the session is
	// rewound to the request and the new reply recorded in its place.
	r2 := e.post(t, "/v1/chat/completions", hdr, body)
	reply2, _ := openAIReply(t, r2, false)
	if r2.header.Get(proxy.HeaderHistory) != "rewind" || r2.header.Get(proxy.HeaderRewound) != "1" || r2.header.Get(proxy.HeaderAppended) != "0" {
		t.Errorf("a retry after the reply: headers %v", r2.header)
	}
	want := append(append([]any{}, history...), reply2)
	if got := wire(t, e.held(t, "retry")); got != wire(t, canonicalOpenAI(t, want)) {
		t.Errorf("after a retry the session holds %s", got)
	}
	// The upstream saw the same context both times (not its own reply).
	rec := e.up.Received()
	var s1, s2 map[string]json.RawMessage
	_ = json.Unmarshal(rec[0].Body, &s1)
	_ = json.Unmarshal(rec[1].Body, &s2)
	if string(s1["messages"]) != string(s2["messages"]) {
		t.Errorf("the retry sent %s, the first request %s", s2["messages"], s1["messages"])
	}
	_ = reply1
	// New messages only: the tool result, twice; the second time the
	// reply is recorded already, and the result is recognised.
	calls := reply2["tool_calls"].([]any)
	id := calls[0].(map[string]any)["id"].(string)
	result := []any{map[string]any{"role": "tool", "tool_call_id": id, "content": "the result"}}
	r3 := e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": result})
	reply3, _ := openAIReply(t, r3, false)
	if r3.header.Get(proxy.HeaderHistory) != "new_only" || r3.header.Get(proxy.HeaderAppended) != "1" {
		t.Errorf("new messages only: headers %v", r3.header)
	}
	want = append(want, result[0], reply3)
	if got := wire(t, e.held(t, "retry")); got != wire(t, canonicalOpenAI(t, want)) {
		t.Errorf("after new messages the session holds %s", got)
	}
	// Whole history again after new-only requests: recognised.
	next := map[string]any{"role": "user", "content": "And then?"}
	full := append(append([]any{}, want...), next)
	r4 := e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": full})
	reply4, _ := openAIReply(t, r4, false)
	if r4.header.Get(proxy.HeaderHistory) != "continuation" || r4.header.Get(proxy.HeaderAppended) != "1" {
		t.Errorf("whole history: headers %v", r4.header)
	}
	if got := wire(t, e.held(t, "retry")); got != wire(t, canonicalOpenAI(t, append(full, reply4))) {
		t.Errorf("after the whole history the session holds %s", got)
	}
}

// TestEditedHistoryRewinds: a client that edits its last question sends a
// history that departs from the session's; the session follows it.
func TestEditedHistoryRewinds(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Script = func(_ string, n int, _ []any) proxytest.Reply {
		return proxytest.Reply{Text: fmt.Sprintf("answer %d", n)}
	}
	hdr := map[string]string{proxy.HeaderSession: "edit"}
	h := []any{map[string]any{"role": "system", "content": systemPrompt}, map[string]any{"role": "user", "content": firstTask}}
	r := e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": h})
	a1, _ := openAIReply(t, r, false)
	h = append(h, a1, map[string]any{"role": "user", "content": "question 2"})
	r = e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": h})
	openAIReply(t, r, false)
	// Edit question 2.
	before := e.lastSeq(t, "edit")
	h[len(h)-1] = map[string]any{"role": "user", "content": "question 2, edited"}
	r = e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": h})
	a3, _ := openAIReply(t, r, false)
	// One write takes question 2 and its answer off and appends the edited
	// question (a step and a compaction); the reply is the third entry.
	if got := e.lastSeq(t, "edit") - before; got != 3 {
		t.Errorf("the edited request and its reply wrote %d log entries, want 3", got)
	}
	if r.header.Get(proxy.HeaderHistory) != "rewind" || r.header.Get(proxy.HeaderRewound) != "2" || r.header.Get(proxy.HeaderAppended) != "1" {
		t.Errorf("an edited history: headers %v", r.header)
	}
	if got := wire(t, e.held(t, "edit")); got != wire(t, canonicalOpenAI(t, append(h, a3))) {
		t.Errorf("after an edit the session holds %s", got)
	}
	// A changed system prompt is amended, the conversation kept.
	h[0] = map[string]any{"role": "system", "content": "A new system prompt."}
	h = append(h, a3, map[string]any{"role": "user", "content": "question 3"})
	r = e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": h})
	a4, _ := openAIReply(t, r, false)
	if r.header.Get(proxy.HeaderHistory) != "continuation" || r.header.Get(proxy.HeaderAppended) != "1" {
		t.Errorf("a new system prompt: headers %v", r.header)
	}
	if got := wire(t, e.held(t, "edit")); got != wire(t, canonicalOpenAI(t, append(h, a4))) {
		t.Errorf("after a new system prompt the session holds %s", got)
	}
}

// TestUpstreamErrorsRelayed: the upstream's status, headers and body
// reach the client as they came, and no reply is recorded.
func TestUpstreamErrorsRelayed(t *testing.T) {
	e := newEnv(t, nil)
	const body = `{"error":{"message":"Rate limit reached","type":"rate_limit_error","code":"rate_limit_exceeded"}}`
	e.up.Fail = func(n int) *proxytest.Failure {
		return &proxytest.Failure{Status: 429, Header: http.Header{"Retry-After": {"7"}, "Content-Type": {"application/json"}}, Body: body}
	}
	hdr := map[string]string{proxy.HeaderSession: "err"}
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	for _, stream := range []bool{false, true} {
		r := e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": msgs, "stream": stream})
		if r.status != 429 || string(r.body) != body || r.header.Get("Retry-After") != "7" {
			t.Errorf("stream %v: %d %v %s", stream, r.status, r.header, r.body)
		}
		if r.header.Get(proxy.HeaderSession) != "err" {
			t.Error("the agentmem headers are missing from an error")
		}
	}
	// The request's message is recorded, once; no reply.
	if got := wire(t, e.held(t, "err")); got != wire(t, canonicalOpenAI(t, msgs)) {
		t.Errorf("the session holds %s", got)
	}
	r := e.post(t, "/v1/messages", hdr, map[string]any{"model": "claude-x", "max_tokens": 10, "messages": msgs})
	if r.status != 429 || string(r.body) != body {
		t.Errorf("anthropic: %d %s", r.status, r.body)
	}
}

// TestStreamCut: a stream the upstream cuts records nothing of the reply;
// the client gets what came.
func TestStreamCut(t *testing.T) {
	e := newEnv(t, nil)
	e.up.CutAfter = 4
	hdr := map[string]string{proxy.HeaderSession: "cut"}
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	r := e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": msgs, "stream": true})
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if _, data := events(t, r.body); len(data) != 4 {
		t.Errorf("the client got %d events, want the 4 sent", len(data))
	}
	if got := wire(t, e.held(t, "cut")); got != wire(t, canonicalOpenAI(t, msgs)) {
		t.Errorf("the session holds %s", got)
	}
	r = e.post(t, "/v1/messages", hdr, map[string]any{"model": "claude-x", "max_tokens": 10, "messages": msgs, "stream": true})
	if names, _ := events(t, r.body); len(names) != 4 {
		t.Errorf("anthropic: the client got %v", names)
	}
	if got := wire(t, e.held(t, "cut")); got != wire(t, canonicalOpenAI(t, msgs)) {
		t.Errorf("after a cut anthropic stream the session holds %s", got)
	}
	// The conversation goes on.
	e.up.CutAfter = 0
	r = e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": msgs, "stream": true})
	reply, _ := openAIReply(t, r, true)
	if got := wire(t, e.held(t, "cut")); got != wire(t, canonicalOpenAI(t, append(msgs, reply))) {
		t.Errorf("the session holds %s", got)
	}
}

// TestPassThrough: without X-Agentmem-Session the body reaches the
// upstream byte for byte and nothing is recorded.
func TestPassThrough(t *testing.T) {
	e := newEnv(t, nil)
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi","unknown_field":1}],"zeta":true}`)
	r := e.post(t, "/v1/chat/completions", map[string]string{"Authorization": "Bearer sk-caller"}, body)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	got := e.up.Received()[0]
	if string(got.Body) != string(body) || got.Header.Get("Authorization") != "Bearer sk-caller" {
		t.Errorf("the upstream got %s with %q", got.Body, got.Header.Get("Authorization"))
	}
	if r.header.Get(proxy.HeaderSession) != "" {
		t.Error("a pass-through has agentmem headers")
	}
	list, err := e.svc.List(t.Context(), store.ListRequest{})
	if err != nil || len(list.Sessions) != 0 {
		t.Errorf("a pass-through recorded %v (%v)", list, err)
	}
}

// TestNotConfigured: a route without an upstream answers 400.
func TestNotConfigured(t *testing.T) {
	e := newEnv(t, func(pc *proxy.Config, _ *server.Config) { pc.Anthropic = proxy.Upstream{} })
	r := e.post(t, "/v1/messages", map[string]string{proxy.HeaderSession: "x"}, map[string]any{"model": "m", "messages": []any{}})
	var eb api.ErrorBody
	if err := json.Unmarshal(r.body, &eb); err != nil || r.status != 400 || eb.Error.Code != api.CodeUpstreamNotConfigured || !strings.Contains(eb.Error.Message, "--anthropic-base-url") {
		t.Errorf("%d %s", r.status, r.body)
	}
	if len(e.up.Received()) != 0 {
		t.Error("the upstream was called")
	}
}

// TestBadInput: bad headers and bodies are refused with 400 naming them,
// and nothing is recorded or sent.
func TestBadInput(t *testing.T) {
	e := newEnv(t, nil)
	ok := []any{map[string]any{"role": "user", "content": "hi"}}
	for _, c := range []struct {
		path   string
		header map[string]string
		body   any
		field  string
	}{
		{"/v1/chat/completions", map[string]string{proxy.HeaderSession: "s", proxy.HeaderBudget: "-1"}, map[string]any{"messages": ok}, proxy.HeaderBudget},
		{"/v1/chat/completions", map[string]string{proxy.HeaderSession: "s", proxy.HeaderFacts: "3"}, map[string]any{"messages": ok}, proxy.HeaderFacts},
		{"/v1/chat/completions", map[string]string{proxy.HeaderSession: ".."}, map[string]any{"messages": ok}, proxy.HeaderSession},
		{"/v1/chat/completions", map[string]string{proxy.HeaderSession: strings.Repeat("s", store.MaxIDLen+1)}, map[string]any{"messages": ok}, proxy.HeaderSession},
		{"/v1/chat/completions", map[string]string{proxy.HeaderSession: "s"}, []byte(`[1]`), ""},
		{"/v1/chat/completions", map[string]string{proxy.HeaderSession: "s"}, map[string]any{"messages": []any{map[string]any{"role": "tool", "content": "x"}}}, "messages[0].tool_call_id"},
		{"/v1/messages", map[string]string{proxy.HeaderSession: "s"}, map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "document"}}}}}, "messages[0].content[0].type"},
		{"/v1/messages", map[string]string{proxy.HeaderSession: "s"}, map[string]any{"messages": []any{map[string]any{"role": "system", "content": "x"}}}, "messages[0].role"},
	} {
		r := e.post(t, c.path, c.header, c.body)
		var eb api.ErrorBody
		if err := json.Unmarshal(r.body, &eb); err != nil || r.status != 400 || eb.Error.Field != c.field {
			t.Errorf("%v %v: %d %s, want 400 naming %q", c.header, c.body, r.status, r.body, c.field)
		}
	}
	if len(e.up.Received()) != 0 {
		t.Error("the upstream was called")
	}
}

// TestSDKMessagesAccepted: the messages an SDK returns carry members the
// API decoder does not take (the OpenAI SDK's parsed and
// parsed_arguments, annotations, a provider's reasoning_content, audio);
// sent back in a history, they are recorded without them and the
// history is recognised.
func TestSDKMessagesAccepted(t *testing.T) {
	e := newEnv(t, nil)
	hdr := map[string]string{proxy.HeaderSession: "sdk"}
	h := []any{map[string]any{"role": "user", "content": "hi"}}
	r := e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": h})
	msg, _ := openAIReply(t, r, false)
	msg["parsed"], msg["reasoning_content"], msg["audio"] = nil, "thinking...", map[string]any{"id": "a"}
	for _, c := range msg["tool_calls"].([]any) {
		c.(map[string]any)["function"].(map[string]any)["parsed_arguments"] = map[string]any{"query": "x"}
	}
	calls := msg["tool_calls"].([]any)
	h = append(h, msg, map[string]any{"role": "tool", "tool_call_id": calls[0].(map[string]any)["id"], "content": "r"})
	r = e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": h})
	reply, _ := openAIReply(t, r, false)
	if r.header.Get(proxy.HeaderHistory) != "continuation" || r.header.Get(proxy.HeaderAppended) != "1" {
		t.Errorf("headers %v", r.header)
	}
	if got := wire(t, e.held(t, "sdk")); got != wire(t, canonicalOpenAI(t, []any{h[0], map[string]any{"role": "assistant", "content": msg["content"], "tool_calls": []any{
		map[string]any{"id": calls[0].(map[string]any)["id"], "type": "function", "function": map[string]any{"name": "lookup", "arguments": calls[0].(map[string]any)["function"].(map[string]any)["arguments"]}}}}, h[2], reply})) {
		t.Errorf("the session holds %s", got)
	}
}

// TestDefaultBudget: without X-Agentmem-Budget the context is fitted to
// the model's context window (the built-in table, or the configured one)
// less the reply's max_tokens and the cost of the other members; a window
// they fill is refused with 400.
func TestDefaultBudget(t *testing.T) {
	e := newEnv(t, func(pc *proxy.Config, _ *server.Config) { pc.ContextWindows = map[string]int{"my-model": 5000} })
	hdr := map[string]string{proxy.HeaderSession: "budget"}
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "lookup"}}}
	toolTokens := o200k(t).Count(wire(t, tools))
	for _, c := range []struct {
		model string
		max   int
		want  int
	}{
		{"gpt-4-0613", 1000, 8192 - 1000 - toolTokens},
		{"my-model-v2", 0, 5000 - proxy.DefaultOutputTokens - toolTokens},
		{"unknown", 2000, proxy.DefaultContextWindow - 2000 - toolTokens},
	} {
		body := map[string]any{"model": c.model, "messages": msgs, "tools": tools}
		if c.max > 0 {
			body["max_completion_tokens"] = c.max
		}
		r := e.post(t, "/v1/chat/completions", hdr, body)
		// The model and the max_completion_tokens count no tokens; the
		// tools do (under the model's tokenizer: cl100k_base for GPT-4).
		got, _ := strconv.Atoi(r.header.Get(proxy.HeaderBudget))
		if c.model == "gpt-4-0613" {
			c.want = 8192 - 1000 - cl100k(t).Count(wire(t, tools))
		}
		if r.status != 200 || got != c.want {
			t.Errorf("%s: %d, budget %d, want %d", c.model, r.status, got, c.want)
		}
	}
	r := e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4", "max_tokens": 9000, "messages": msgs})
	if r.status != 400 || !strings.Contains(string(r.body), proxy.HeaderBudget) {
		t.Errorf("a full window: %d %s", r.status, r.body)
	}
}

// TestImages: images in user messages reach the upstream and are
// recognised when the history is sent again.
func TestImages(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Script = func(string, int, []any) proxytest.Reply { return proxytest.Reply{Text: "a cat"} }
	img := []any{map[string]any{"type": "text", "text": "What is this?"}, map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/cat.png", "detail": "low"}}}
	h := []any{map[string]any{"role": "user", "content": img}}
	hdr := map[string]string{proxy.HeaderSession: "img"}
	r := e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": h})
	reply, _ := openAIReply(t, r, false)
	if !strings.Contains(string(e.up.Received()[0].Body), `"image_url":{"url":"https://example.com/cat.png","detail":"low"}`) {
		t.Errorf("the upstream got %s", e.up.Received()[0].Body)
	}
	h = append(h, reply, map[string]any{"role": "user", "content": "And this one?"})
	// Encoded otherwise, so that the general path compares the images
	// (the fast path compares bytes).
	indented, _ := json.MarshalIndent(map[string]any{"model": "gpt-4o", "messages": h}, "", " ")
	r = e.post(t, "/v1/chat/completions", hdr, indented)
	if e.Proxy.FastRecorded() != 0 {
		t.Error("an indented history took the fast path")
	}
	if r.status != 200 || r.header.Get(proxy.HeaderHistory) != "continuation" || r.header.Get(proxy.HeaderAppended) != "1" {
		t.Errorf("the history with an image: %d %v", r.status, r.header)
	}
	// Anthropic: a base64 image.
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	ah := []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": png}}, map[string]any{"type": "text", "text": "What is this?"}}}}
	ahdr := map[string]string{proxy.HeaderSession: "img-a"}
	r = e.post(t, "/v1/messages", ahdr, map[string]any{"model": "claude-x", "max_tokens": 10, "messages": ah})
	if r.status != 200 || !strings.Contains(string(e.up.Received()[2].Body), png) {
		t.Fatalf("%d; the upstream got %.300s", r.status, e.up.Received()[2].Body)
	}
	var resp struct {
		Content []any `json:"content"`
	}
	_ = json.Unmarshal(r.body, &resp)
	ah = append(ah, map[string]any{"role": "assistant", "content": resp.Content}, map[string]any{"role": "user", "content": "And?"})
	indented, _ = json.MarshalIndent(map[string]any{"model": "claude-x", "max_tokens": 10, "messages": ah}, "", " ")
	r = e.post(t, "/v1/messages", ahdr, indented)
	if r.status != 200 || r.header.Get(proxy.HeaderHistory) != "continuation" || r.header.Get(proxy.HeaderAppended) != "1" {
		t.Errorf("the Anthropic history with an image: %d %v", r.status, r.header)
	}
}

// TestReplyTooLargeToRecord: a whole answer larger than MaxReplyBytes is
// relayed whole, and recorded cut short, marked truncated.
func TestReplyTooLargeToRecord(t *testing.T) {
	e := newEnv(t, func(pc *proxy.Config, _ *server.Config) { pc.MaxReplyBytes = 300 })
	long := strings.Repeat("a long answer ", 100)
	e.up.Script = func(string, int, []any) proxytest.Reply { return proxytest.Reply{Text: long} }
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	r := e.post(t, "/v1/chat/completions", map[string]string{proxy.HeaderSession: "big"}, map[string]any{"model": "gpt-4o", "messages": msgs})
	if _, text := openAIReply(t, r, false); text != long {
		t.Errorf("the client got %d bytes of text, want %d", len(text), len(long))
	}
	held := e.held(t, "big")
	if c, _ := held[len(held)-1].Content.(string); len(held) != 2 || len(c) > 300 || len(c) < 250 || !strings.HasPrefix(long, c) {
		t.Errorf("the session holds %s", wire(t, held))
	}
	if md := e.lastStep(t, "big").Info().Metadata; md[proxy.MetaReplyTruncated] != "true" || md[proxy.MetaReplyBytes] != strconv.Itoa(len(r.body)) {
		t.Errorf("the reply's metadata: %v (the answer was %d bytes)", md, len(r.body))
	}
}
