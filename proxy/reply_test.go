package proxy_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/proxy/proxytest"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
)

// longText is n bytes of text whose lines are numbered, so that a prefix
// of it is told from another part.
func longText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "Line %d of a very long answer, with accents (é, ü) and a quote \" to escape.\n", i)
	}
	return b.String()[:n]
}

// anthropicReply reads a message, whole or streamed, as a client does: its
// content blocks (to append to the history) and its text.
func anthropicReply(t *testing.T, r response, stream bool) ([]any, string) {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %.300s", r.status, r.body)
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
	} else {
		names, data := events(t, r.body)
		if len(names) == 0 || names[len(names)-1] != "message_stop" {
			t.Fatalf("the stream does not end with message_stop")
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
	for _, b := range content {
		if m := b.(map[string]any); m["type"] == "text" {
			text.WriteString(m["text"].(string))
		}
	}
	return content, text.String()
}

// heldStats records the proxy's Stats.
type heldStats struct {
	mu    sync.Mutex
	calls []proxy.Stats
}

func (h *heldStats) ProxyCall(st proxy.Stats) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, st)
}

func (h *heldStats) last() proxy.Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[len(h.calls)-1]
}

// lastStep returns the newest step of a session's working set.
func (e *env) lastStep(t *testing.T, id string) agentmem.Step {
	t.Helper()
	h, err := e.svc.History(t.Context(), sessions.HistoryRequest{SessionID: id})
	if err != nil || len(h.Steps) == 0 {
		t.Fatalf("the session %s: %v", id, err)
	}
	return h.Steps[len(h.Steps)-1]
}

// TestReplyCap: an answer larger than Config.MaxReplyBytes reaches the
// client whole, streamed (in small events, or in events larger than the
// cap) or not, on both APIs; the proxy holds a bounded part of it
// (Stats.ReplyHeld, which does not grow with the answer) and records the
// reply cut short, with its tool call, marked truncated
// (proxy.reply_truncated, proxy.reply_bytes); the client's next request,
// which resends the whole reply, continues the session.
func TestReplyCap(t *testing.T) {
	const maxReply = 16 << 10
	for _, c := range []struct {
		api    string
		stream bool
		chunk  int
	}{
		{"openai", false, 0}, {"openai", true, 4 << 10}, {"openai", true, 128 << 10},
		{"anthropic", false, 0}, {"anthropic", true, 4 << 10}, {"anthropic", true, 128 << 10},
	} {
		api, stream := c.api, c.stream
		{
			t.Run(fmt.Sprintf("%s stream %v events of %d", api, stream, c.chunk), func(t *testing.T) {
				obs := &heldStats{}
				e := newEnv(t, func(pc *proxy.Config, _ *server.Config) { pc.MaxReplyBytes = maxReply })
				e.Proxy.Observe(obs)
				e.up.Chunk = c.chunk
				callID := "call_big"
				if api == "anthropic" {
					callID = "toolu_big"
				}
				held := map[int]int{}
				for _, size := range []int{256 << 10, 2 << 20} {
					text := longText(size)
					args := `{"query":"` + strings.Repeat("q", 32<<10) + `"}`
					e.up.Script = func(string, int, []any) proxytest.Reply {
						return proxytest.Reply{Text: text, Calls: []proxytest.Call{{ID: callID, Name: "lookup", Args: args}}}
					}
					sid := "big-" + strconv.Itoa(size)
					hdr := map[string]string{proxy.HeaderSession: sid}
					h := []any{map[string]any{"role": "user", "content": "tell me everything"}}
					var r response
					var got string
					var reply any
					if api == "openai" {
						r = e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": h, "stream": stream})
						var m map[string]any
						m, got = openAIReply(t, r, stream)
						reply = m
					} else {
						r = e.post(t, "/v1/messages", hdr, map[string]any{"model": "claude-x", "max_tokens": 10, "messages": h, "stream": stream})
						var content []any
						content, got = anthropicReply(t, r, stream)
						reply = map[string]any{"role": "assistant", "content": content}
					}
					if got != text {
						t.Fatalf("%d bytes: the client got %d bytes of text, want all %d", size, len(got), len(text))
					}
					st := obs.last()
					held[size] = st.ReplyHeld
					if !st.Reply || !st.ReplyTruncated {
						t.Errorf("%d bytes: Stats reply %v truncated %v", size, st.Reply, st.ReplyTruncated)
					}
					// The reply recorded: cut short, marked, with its call.
					s := e.lastStep(t, sid)
					md := s.Info().Metadata
					if md[proxy.MetaReplyTruncated] != "true" {
						t.Errorf("%d bytes: the reply is not marked truncated: %v", size, md)
					}
					if n, _ := strconv.Atoi(md[proxy.MetaReplyBytes]); n < size {
						t.Errorf("%d bytes: %s = %q", size, proxy.MetaReplyBytes, md[proxy.MetaReplyBytes])
					}
					msgs := agentmem.OpenAI.StepMessages(s, agentmem.RenderOptions{})
					if len(msgs) == 0 || msgs[0].Role != agentmem.RoleAssistant {
						t.Fatalf("%d bytes: the newest step is %+v", size, msgs)
					}
					rec := msgs[0]
					if rt := rec.Text(); len(rt) > maxReply || len(rt) < maxReply/2 || !strings.HasPrefix(text, rt) {
						t.Errorf("%d bytes: the recorded text is %d bytes, a prefix %v; want a prefix of at most %d", size, len(rt), strings.HasPrefix(text, rt), maxReply)
					}
					if len(rec.ToolCalls) != 1 || rec.ToolCalls[0].ID != callID || rec.ToolCalls[0].Name != "lookup" || len(rec.ToolCalls[0].Arguments) > maxReply {
						t.Errorf("%d bytes: the recorded calls: %d", size, len(rec.ToolCalls))
					}
					call, ok := proxy.CallOf(md)
					if !ok || !call.ReplyTruncated || call.ReplyBytes < int64(size) {
						t.Errorf("%d bytes: CallOf: %+v", size, call)
					}
					// The next request resends the whole reply and the
					// call's result: the session goes on.
					var result any
					if api == "openai" {
						result = map[string]any{"role": "tool", "tool_call_id": callID, "content": "found"}
					} else {
						result = map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": callID, "content": "found"}}}
					}
					e.up.Script = func(string, int, []any) proxytest.Reply { return proxytest.Reply{Text: "done"} }
					h = append(h, reply, result)
					if api == "openai" {
						r = e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": h})
					} else {
						r = e.post(t, "/v1/messages", hdr, map[string]any{"model": "claude-x", "max_tokens": 10, "messages": h})
					}
					if r.status != 200 || r.header.Get(proxy.HeaderHistory) != "continuation" || r.header.Get(proxy.HeaderAppended) != "1" {
						t.Errorf("%d bytes: the next request: %d %s %s appended %s: %.300s", size, r.status,
							r.header.Get(proxy.HeaderHistory), r.header.Get(proxy.HeaderRewound), r.header.Get(proxy.HeaderAppended), r.body)
					}
				}
				// What was held does not grow with the answer: at most
				// twice the cap (at least 64 KiB) and 128 KiB of
				// structure.
				for size, n := range held {
					if n <= 0 || n > 2*max(maxReply, 64<<10)+128<<10 {
						t.Errorf("%d bytes: the proxy held %d bytes of the answer (cap %d)", size, n, maxReply)
					}
				}
				if held[2<<20] > held[256<<10]+maxReply/2 {
					t.Errorf("what the proxy held grew with the answer: %v", held)
				}
			})
		}
	}
}

// TestReplyOverStepLimit: a reply the store could not hold as one step
// (more than store.MaxStepBytes as JSON), under a cap that lets the proxy
// hold it, is recorded cut to fit, marked truncated, rather than lost.
func TestReplyOverStepLimit(t *testing.T) {
	e := newEnv(t, func(pc *proxy.Config, _ *server.Config) { pc.MaxReplyBytes = 16 << 20 })
	text := longText(9 << 19)
	e.up.Script = func(string, int, []any) proxytest.Reply { return proxytest.Reply{Text: text} }
	e.up.Chunk = 512 << 10
	for _, stream := range []bool{false, true} {
		sid := "huge-" + strconv.FormatBool(stream)
		r := e.post(t, "/v1/chat/completions", map[string]string{proxy.HeaderSession: sid},
			map[string]any{"model": "gpt-4o", "messages": []any{map[string]any{"role": "user", "content": "hi"}}, "stream": stream})
		if _, got := openAIReply(t, r, stream); got != text {
			t.Fatalf("stream %v: the client got %d bytes of text", stream, len(got))
		}
		s := e.lastStep(t, sid)
		b, err := store.EncodeStep(s)
		if err != nil || len(b) > store.MaxStepBytes || len(b) < store.MaxStepBytes/2 {
			t.Errorf("stream %v: the recorded step is %d bytes as JSON (at most %d): %v", stream, len(b), store.MaxStepBytes, err)
		}
		rt := agentmem.OpenAI.StepMessages(s, agentmem.RenderOptions{})[0].Text()
		if s.Info().Metadata[proxy.MetaReplyTruncated] != "true" || !strings.HasPrefix(text, rt) {
			t.Errorf("stream %v: the recorded reply (%d bytes) is not a marked prefix: %v", stream, len(rt), s.Info().Metadata)
		}
	}
}

// TestReplyInvalidUTF8: an answer whose text holds bytes that are not
// UTF-8 reaches the client as it came; the reply is recorded with U+FFFD
// in their place (a step's text is UTF-8) and says so
// (proxy.reply_invalid_utf8).
func TestReplyInvalidUTF8(t *testing.T) {
	const bad = "caf\xe9 au lait \xff"
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Stream") == "1" {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"%s\"}}]}\n\n", bad)
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"%s"}}]}`, bad)
	})
	e := newEnv(t, func(pc *proxy.Config, _ *server.Config) { pc.OpenAI.BaseURL = up.URL })
	for _, stream := range []bool{false, true} {
		sid := "utf8-" + strconv.FormatBool(stream)
		hdr := map[string]string{proxy.HeaderSession: sid}
		if stream {
			hdr["X-Test-Stream"] = "1"
		}
		r := e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": "hi"}}, "stream": stream})
		if r.status != 200 || !strings.Contains(string(r.body), bad) {
			t.Errorf("stream %v: the client got %d %q, not the bytes sent", stream, r.status, r.body)
		}
		s := e.lastStep(t, sid)
		want := "caf\uFFFD au lait \uFFFD"
		if got := agentmem.OpenAI.StepMessages(s, agentmem.RenderOptions{})[0].Text(); got != want || s.Info().Metadata[proxy.MetaReplyInvalidUTF8] != "true" {
			t.Errorf("stream %v: recorded %q, metadata %v", stream, got, s.Info().Metadata)
		}
		if call, _ := proxy.CallOf(s.Info().Metadata); !call.ReplyInvalidUTF8 || call.ReplyTruncated {
			t.Errorf("stream %v: CallOf: %+v", stream, call)
		}
	}
	// Valid text is not marked.
	e2 := newEnv(t, nil)
	r := e2.post(t, "/v1/chat/completions", map[string]string{proxy.HeaderSession: "ok"}, map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if r.status != 200 {
		t.Fatal(r.status)
	}
	if md := e2.lastStep(t, "ok").Info().Metadata; md[proxy.MetaReplyInvalidUTF8] != "" || md[proxy.MetaReplyTruncated] != "" {
		t.Errorf("a valid reply is marked: %v", md)
	}
}
