package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/proxy/proxytest"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
)

// BenchmarkWholeHistory measures a request through the proxy that
// resends a session's whole history of 1,000 turns plus a new message
// (agentmem-bench proxy measures the overhead under concurrency).
func BenchmarkWholeHistory(b *testing.B) {
	e, err := proxytest.Start(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	e.Upstream.Script = func(string, int, []any) proxytest.Reply { return proxytest.Reply{Text: "ok"} }
	filler := strings.Repeat("some words of the conversation ", 6)
	var h []any
	h = append(h, map[string]any{"role": "system", "content": "sys"})
	for i := range 1000 {
		h = append(h, map[string]any{"role": "user", "content": fmt.Sprintf("Q%d %s", i, filler)}, map[string]any{"role": "assistant", "content": fmt.Sprintf("A%d %s", i, filler)})
	}
	raw, _ := json.Marshal(h)
	var msgs []agentmem.Message
	_ = json.Unmarshal(raw, &msgs)
	ctx := context.Background()
	if _, err := e.Sessions.Create(ctx, store.CreateRequest{ID: "b"}); err != nil {
		b.Fatal(err)
	}
	if _, err := e.Sessions.AppendMessages(ctx, sessions.MessagesRequest{SessionID: "b", Messages: msgs}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		h = append(h, map[string]any{"role": "user", "content": fmt.Sprintf("new %d", i)})
		body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": h})
		req, _ := http.NewRequest("POST", e.Server.URL+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set(proxy.HeaderSession, "b")
		req.Header.Set(proxy.HeaderBudget, "8000")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var c struct {
			Choices []struct {
				Message map[string]any `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(out, &c); err != nil || len(c.Choices) == 0 {
			b.Fatalf("%s", out)
		}
		h = append(h, c.Choices[0].Message)
	}
}
