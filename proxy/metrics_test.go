package proxy_test

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/proxy/proxytest"
	"github.com/agentmem/agentmem/server"
)

// metrics returns the samples of the server's /metrics, by name and
// labels as the text format writes them.
func (e *env) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	resp, err := http.Get(e.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %v", resp.StatusCode, err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("a sample %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetrics: the calls through the proxy move its metrics: requests by
// route, outcome and status class; the upstream's time and the proxy's
// own before and after it; the context's tokens and dropped steps; the
// messages recorded.
func TestMetrics(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Fail = func(n int) *proxytest.Failure {
		if n == 2 {
			return &proxytest.Failure{Status: 429, Body: `{"error":{"message":"slow down"}}`}
		}
		return nil
	}
	const chat = `route="POST /v1/chat/completions"`
	hdr := map[string]string{proxy.HeaderSession: "m", proxy.HeaderBudget: "60"}
	h := []any{map[string]any{"role": "system", "content": "Be brief."}}
	for i := range 6 {
		h = append(h, map[string]any{"role": "user", "content": "question number " + strconv.Itoa(i) + " with a few more words to take room"})
		if i == 4 {
			break
		}
		h = append(h, map[string]any{"role": "assistant", "content": "answer " + strconv.Itoa(i) + " with a few more words to take room as well"})
	}
	// 1: a whole history of 10 messages, recorded with its reply.
	r := e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": h})
	reply, _ := openAIReply(t, r, false)
	dropped, _ := strconv.Atoi(r.header.Get(proxy.HeaderStepsDropped))
	tokens, _ := strconv.Atoi(r.header.Get(proxy.HeaderContextTokens))
	if r.status != 200 || dropped == 0 {
		t.Fatalf("%d, %d steps dropped: %s", r.status, dropped, r.body)
	}
	// 2: streamed, one new message and the reply recorded.
	h = append(h, reply, map[string]any{"role": "user", "content": "and then?"})
	r = e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": h, "stream": true})
	openAIReply(t, r, true)
	// 3: the upstream's 429, relayed; the new message recorded.
	r = e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": []any{map[string]any{"role": "user", "content": "more"}}})
	if r.status != 429 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	// 4: refused by the proxy; 5: passed through, on the other route.
	r = e.post(t, "/v1/chat/completions", map[string]string{proxy.HeaderSession: "m", proxy.HeaderBudget: "lots"}, map[string]any{"model": "gpt-4o", "messages": h})
	if r.status != 400 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	r = e.post(t, "/v1/messages", nil, map[string]any{"model": "claude-x", "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	const msgs = `route="POST /v1/messages"`
	m := e.metrics(t)
	for sample, want := range map[string]float64{
		`agentmem_proxy_requests_total{outcome="ok",` + chat + `,status="2xx"}`:             2,
		`agentmem_proxy_requests_total{outcome="upstream_error",` + chat + `,status="4xx"}`: 1,
		`agentmem_proxy_requests_total{outcome="refused",` + chat + `,status="4xx"}`:        1,
		`agentmem_proxy_requests_total{outcome="ok",` + msgs + `,status="2xx"}`:             1,
		`agentmem_proxy_messages_recorded_total{` + chat + `,source="request"}`:             12,
		`agentmem_proxy_messages_recorded_total{` + chat + `,source="reply"}`:               2,
		`agentmem_proxy_context_tokens_count{` + chat + `}`:                                 3,
		`agentmem_proxy_upstream_duration_seconds_count{` + chat + `}`:                      3,
		`agentmem_proxy_upstream_duration_seconds_count{` + msgs + `}`:                      1,
		`agentmem_proxy_overhead_seconds_count{phase="before",` + chat + `}`:                3,
		`agentmem_proxy_overhead_seconds_count{phase="after",` + chat + `}`:                 3,
	} {
		if m[sample] != want {
			t.Errorf("%s = %v, want %v", sample, m[sample], want)
		}
	}
	if got := m[`agentmem_proxy_context_steps_dropped_total{`+chat+`}`]; got < float64(dropped) {
		t.Errorf("%v steps dropped counted, the first call alone dropped %d", got, dropped)
	}
	if got := m[`agentmem_proxy_context_tokens_sum{`+chat+`}`]; got < float64(tokens) {
		t.Errorf("%v context tokens counted, the first call alone sent %d", got, tokens)
	}
	if m[`agentmem_proxy_overhead_seconds_sum{phase="before",`+chat+`}`] <= 0 || m[`agentmem_proxy_upstream_duration_seconds_sum{`+chat+`}`] <= 0 {
		t.Error("no time measured")
	}
	if _, ok := m[`agentmem_proxy_context_tokens_count{`+msgs+`}`]; ok {
		t.Error("a call that passed through counted a context")
	}
	// An upstream that cannot be reached.
	down := newEnv(t, nil)
	down.up.Close()
	r = down.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": h})
	if r.status != 502 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if got := down.metrics(t)[`agentmem_proxy_requests_total{outcome="unreachable",`+chat+`,status="5xx"}`]; got != 1 {
		t.Errorf("unreachable: %v", got)
	}
}

// TestCORS: a page of an allowed origin may send the agentmem request
// headers (the preflight allows them) and read those of the answer (they
// are exposed); the provider's own CORS headers do not replace the
// server's.
func TestCORS(t *testing.T) {
	const app = "https://app.example"
	e := newEnv(t, func(_ *proxy.Config, sc *server.Config) { sc.CORSOrigins = []string{app} })
	e.up.Fail = func(int) *proxytest.Failure {
		return &proxytest.Failure{Status: 429, Header: http.Header{"Access-Control-Allow-Origin": {"*"}, "Access-Control-Expose-Headers": {"X-Provider"}},
			Body: `{"error":{"message":"slow down"}}`}
	}
	req, _ := http.NewRequest("OPTIONS", e.srv.URL+"/v1/chat/completions", nil)
	req.Header.Set("Origin", app)
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, x-agentmem-session, x-agentmem-budget")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	allowed := strings.Split(resp.Header.Get("Access-Control-Allow-Headers"), ", ")
	for _, h := range proxy.RequestHeaders {
		if !slices.Contains(allowed, h) {
			t.Errorf("the preflight does not allow %s: %v", h, allowed)
		}
	}
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	r := e.post(t, "/v1/chat/completions", map[string]string{"Origin": app, "Sec-Fetch-Site": "cross-site", proxy.HeaderSession: "cors"},
		map[string]any{"model": "gpt-4o", "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	exposed := strings.Split(r.header.Get("Access-Control-Expose-Headers"), ", ")
	for _, h := range proxy.ResponseHeaders {
		if !slices.Contains(exposed, h) {
			t.Errorf("%s is not exposed: %v", h, exposed)
		}
	}
	if r.status != 429 || r.header.Get("Access-Control-Allow-Origin") != app || slices.Contains(exposed, "X-Provider") || r.header.Get(proxy.HeaderContextTokens) == "" {
		t.Errorf("%d %v", r.status, r.header)
	}
}
