package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/proxy/proxytest"
)

// TestServeProxy: agentmem serve configures the proxy routes from its
// flags and environment variables: the OpenAI upstream and its key from
// AGENTMEM_UPSTREAM_BASE_URL and AGENTMEM_UPSTREAM_API_KEY, and a route
// without an upstream answers 400; a bad upstream URL is refused at start.
func TestServeProxy(t *testing.T) {
	up := proxytest.New()
	defer up.Close()
	env := map[string]string{"AGENTMEM_UPSTREAM_BASE_URL": up.OpenAIBaseURL(), "AGENTMEM_UPSTREAM_API_KEY": "sk-from-env"}
	s := serve(t, env, "--addr", "127.0.0.1:0", "--store", "mem://")
	req, _ := http.NewRequest("POST", "http://"+s.addr+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("X-Agentmem-Session", "cli")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Agentmem-Session") != "cli" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	if rec := up.Received(); len(rec) != 1 || rec[0].Header.Get("Authorization") != "Bearer sk-from-env" {
		t.Errorf("the upstream received %v", rec)
	}
	code, body := call(t, http.DefaultClient, "POST", "http://"+s.addr+"/v1/messages", "", `{"model":"claude","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
	if code != 400 || !strings.Contains(body, "upstream_not_configured") || !strings.Contains(body, "--anthropic-base-url") {
		t.Errorf("no Anthropic upstream: %d %s", code, body)
	}
	if code, _, stderr := runCLI(t, nil, "", "serve", "--addr", "127.0.0.1:0", "--store", "mem://", "--upstream-base-url", "ftp://x"); code != 2 || !strings.Contains(stderr, "http://") {
		t.Errorf("a bad upstream URL: exit %d %q", code, stderr)
	}
}
