package proxy_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/server"
)

func TestUpstreamWarnings(t *testing.T) {
	for _, tc := range []struct {
		openAI, anthropic string
		want              []string // a part of each warning, in order
	}{
		{"https://api.openai.com/v1", "https://api.anthropic.com", nil},
		{"http://localhost:11434/v1/", "", nil},
		{"https://openrouter.ai/api/v1", "", nil},
		{"https://api.openai.com", "", []string{"has no path: calls go to https://api.openai.com/chat/completions"}},
		{"https://api.openai.com/v1/chat/completions", "", []string{"names the route itself"}},
		{"", "https://api.anthropic.com/v1", []string{"ends in /v1: calls go to https://api.anthropic.com/v1/v1/messages"}},
		{"http://u:secret@host", "", []string{"http://u:xxxxx@host"}},
	} {
		got := proxy.UpstreamWarnings(proxy.Upstream{BaseURL: tc.openAI}, proxy.Upstream{BaseURL: tc.anthropic})
		if len(got) != len(tc.want) {
			t.Errorf("%q %q: warnings %q, want %d", tc.openAI, tc.anthropic, got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) || strings.Contains(got[i], "secret") {
				t.Errorf("%q %q: warning %q, want it to contain %q (and no password)", tc.openAI, tc.anthropic, got[i], w)
			}
		}
	}
}

// TestUpstreamNotFoundIsLogged: a base URL without the provider's path
// makes every call 404 at the provider; the log names the URL called.
func TestUpstreamNotFoundIsLogged(t *testing.T) {
	var log syncBuffer
	e := newEnv(t, func(pc *proxy.Config, _ *server.Config) {
		pc.OpenAI.BaseURL = strings.TrimSuffix(pc.OpenAI.BaseURL, "/v1") + "/wrong"
		pc.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	resp := e.post(t, "/v1/chat/completions", nil, map[string]any{
		"model": "gpt-4o", "messages": []map[string]any{{"role": "user", "content": "hi"}}})
	if resp.status != http.StatusNotFound {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	if !strings.Contains(log.String(), "the upstream has no such route") || !strings.Contains(log.String(), "/wrong/chat/completions") {
		t.Errorf("the log does not name the URL called:\n%s", log.String())
	}
}
