package proxy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/server"
)

// recorder is an HTTP server that records every request it receives.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

// recorded is a request a recorder received.
type recorded struct {
	method, path string
	header       http.Header
	body         string
}

func newRecorder(t *testing.T, h http.HandlerFunc) *recorder {
	rec := &recorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, recorded{r.Method, r.URL.Path, r.Header.Clone(), string(b)})
		rec.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"collected"}}],"content":[{"type":"text","text":"collected"}]}`)
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (r *recorder) received() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

// TestRedirectsNotFollowed: an upstream that answers with a redirect, to
// another host or to itself, gets no second request: the provider key and
// the body never reach the redirect's target, the client gets 502
// upstream_redirect, and nothing of a reply is recorded.
func TestRedirectsNotFollowed(t *testing.T) {
	collector := newRecorder(t, nil)
	// Another host than the upstream's 127.0.0.1.
	elsewhere := strings.Replace(collector.URL, "127.0.0.1", "localhost", 1)
	for _, c := range []struct {
		name   string
		status int
		target func(up string) string
	}{
		{"cross-host 307", http.StatusTemporaryRedirect, func(string) string { return elsewhere + "/steal" }},
		{"cross-host 308", http.StatusPermanentRedirect, func(string) string { return elsewhere + "/steal" }},
		{"cross-host 302", http.StatusFound, func(string) string { return elsewhere + "/steal" }},
		{"same host 307", http.StatusTemporaryRedirect, func(up string) string { return up + "/again" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var upURL string
			upstream := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/again" {
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"followed"}}]}`)
					return
				}
				http.Redirect(w, r, c.target(upURL), c.status)
			})
			upURL = upstream.URL
			e := newEnv(t, func(pc *proxy.Config, _ *server.Config) {
				pc.OpenAI = proxy.Upstream{BaseURL: upstream.URL + "/v1", APIKey: "sk-openai-secret"}
				pc.Anthropic = proxy.Upstream{BaseURL: upstream.URL, APIKey: "sk-ant-secret"}
			})
			n := 0
			for _, route := range []string{"/v1/chat/completions", "/v1/messages"} {
				for _, sid := range []string{"redirected", ""} {
					for _, stream := range []bool{false, true} {
						hdr := map[string]string{}
						if sid != "" {
							hdr[proxy.HeaderSession] = sid
						}
						body := map[string]any{"model": "m", "max_tokens": 10, "stream": stream, "messages": []any{map[string]any{"role": "user", "content": "the secret question"}}}
						r := e.post(t, route, hdr, body)
						n++
						var eb api.ErrorBody
						if err := json.Unmarshal(r.body, &eb); err != nil || r.status != 502 || eb.Error.Code != api.CodeUpstreamRedirect {
							t.Errorf("%s session %q stream %v: %d %s, want 502 %s", route, sid, stream, r.status, r.body, api.CodeUpstreamRedirect)
						}
						if !strings.Contains(eb.Error.Message, "redirect") {
							t.Errorf("the message does not name the redirect: %s", eb.Error.Message)
						}
					}
				}
			}
			if got := len(upstream.received()); got != n {
				t.Errorf("the upstream got %d requests, want %d (one per call: no redirect followed)", got, n)
			}
			for _, rq := range collector.received() {
				t.Errorf("the redirect's target got %s %s with key %q %q and body %q", rq.method, rq.path,
					rq.header.Get("Authorization"), rq.header.Get("X-Api-Key"), rq.body)
			}
			// Nothing of a reply was recorded.
			for _, m := range e.held(t, "redirected") {
				if m.Role == "assistant" {
					t.Errorf("a reply was recorded: %+v", m)
				}
			}
		})
	}
}
