package proxy_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/server"
)

// TestUpstreamFailuresCounted: an upstream that cannot be reached, or
// that redirects, is counted and logged as an upstream failure
// (agentmem_proxy_upstream_errors_total), not as a failure of the store.
func TestUpstreamFailuresCounted(t *testing.T) {
	var logs syncBuffer
	redirecting := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:1/elsewhere", http.StatusTemporaryRedirect)
	})
	e := newEnv(t, func(pc *proxy.Config, sc *server.Config) {
		pc.Anthropic = proxy.Upstream{BaseURL: redirecting.URL}
		sc.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	e.up.Close() // the OpenAI upstream is down
	hdr := map[string]string{proxy.HeaderSession: "down"}
	body := map[string]any{"model": "m", "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	if r := e.post(t, "/v1/chat/completions", hdr, body); r.status != 502 {
		t.Fatalf("unreachable: %d %s", r.status, r.body)
	}
	if r := e.post(t, "/v1/messages", hdr, body); r.status != 502 {
		t.Fatalf("redirect: %d %s", r.status, r.body)
	}
	m := e.metrics(t)
	for sample, want := range map[string]float64{
		`agentmem_proxy_upstream_errors_total{code="upstream_unreachable",route="POST /v1/chat/completions"}`: 1,
		`agentmem_proxy_upstream_errors_total{code="upstream_redirect",route="POST /v1/messages"}`:            1,
		`agentmem_proxy_requests_total{outcome="unreachable",route="POST /v1/chat/completions",status="5xx"}`: 1,
		`agentmem_proxy_requests_total{outcome="redirect",route="POST /v1/messages",status="5xx"}`:            1,
	} {
		if m[sample] != want {
			t.Errorf("%s = %v, want %v", sample, m[sample], want)
		}
	}
	for sample, v := range m {
		if strings.HasPrefix(sample, "agentmem_store_errors_total") && v != 0 {
			t.Errorf("%s = %v: an upstream's failure counted as the store's", sample, v)
		}
	}
	out := logs.String()
	if strings.Contains(out, "store unavailable") || strings.Count(out, "the upstream failed") != 2 || !strings.Contains(out, "localhost:1/elsewhere") {
		t.Errorf("the logs:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
