package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

func TestNewConfig(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("no store: no error")
	}
	mem := memstore.New(memstore.Options{})
	defer mem.Close()
	if _, err := New(Config{Store: mem, DefaultTokenizer: "gpt2"}); err == nil {
		t.Error("unknown tokenizer: no error")
	}
	for _, n := range []int{-1, MaxBudget + 1} {
		if _, err := New(Config{Store: mem, MaxContextTokens: n}); err == nil {
			t.Errorf("MaxContextTokens %d: no error", n)
		}
	}
	// Two servers side by side each have their own metrics registry.
	a, err := New(Config{Store: mem})
	if err != nil {
		t.Fatal(err)
	}
	if a.cfg.MaxContextTokens != DefaultMaxContextTokens || a.svc.CacheStats().Max != DefaultCacheBytes {
		t.Errorf("defaults: max context %d, cache %d bytes", a.cfg.MaxContextTokens, a.svc.CacheStats().Max)
	}
	b, err := New(Config{Store: mem})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	a.Close()
	b.Close()
}

func TestHealthAndReadiness(t *testing.T) {
	e := newEnv(t)
	e.must(200, "GET", "/healthz", nil)
	e.must(200, "GET", "/readyz", nil)
	// Without Ping, readiness lists a session; an outage makes it 503.
	e.store.setFail(errOutage)
	r := e.must(503, "GET", "/readyz", nil)
	if r.header.Get("Retry-After") == "" || strings.Contains(string(r.body), "5432") {
		t.Errorf("not ready: %v %s", r.header, r.body)
	}
	e.must(200, "GET", "/healthz", nil) // the process is still up
	e.store.setFail(nil)
	e.must(200, "GET", "/readyz", nil) // and it recovers

	// A store with Ping is pinged.
	var ps *pingStore
	e2 := newEnv(t, func(c *Config) {
		ps = &pingStore{faultyStore: faultyOf(c.Store)}
		c.Store = store.New(ps)
	})
	e2.must(200, "GET", "/readyz", nil)
	ps.setFail(errOutage)
	e2.must(503, "GET", "/readyz", nil)
	if ps.pings.Load() != 2 {
		t.Errorf("%d pings", ps.pings.Load())
	}
}

// TestStoreOutage: a store that is unavailable (a transient error) is 503
// with Retry-After on every route; any other store failure is 500
// internal, without Retry-After. Neither says what went wrong, and both
// are logged and counted.
func TestStoreOutage(t *testing.T) {
	for _, f := range []storeFailure{
		{"unavailable", errOutage, 503, api.CodeUnavailable, "1", "store unavailable"},
		{"broken", errBroken, 500, api.CodeInternal, "", "internal error"},
	} {
		t.Run(f.name, f.check)
	}
}

// storeFailure is a failure of the store and how the API answers it.
type storeFailure struct {
	name   string
	err    error
	status int
	code   string
	retry  string // the Retry-After header
	log    string // the message the failures are logged with
}

// check fails every route of the store with f.err.
func (f storeFailure) check(t *testing.T) {
	e := newEnv(t)
	e.session("s", 2)
	e.must(200, "GET", "/v1/sessions/s/context", nil)
	e.store.setFail(f.err)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/sessions", `{}`},
		{"GET", "/v1/sessions", ""},
		{"GET", "/v1/sessions/s", ""},
		{"DELETE", "/v1/sessions/s", ""},
		{"POST", "/v1/sessions/s/fork", `{}`},
		{"POST", "/v1/sessions/s/steps", taskStep},
		{"GET", "/v1/sessions/s/steps", ""},
		{"POST", "/v1/sessions/s/messages", `{"role":"user","content":"x"}`},
		{"GET", "/v1/sessions/s/context", ""},
		{"POST", "/v1/sessions/s/compact", `{"strategy":"keep_last_n","n":1}`},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		r := e.do(c.method, c.path, body)
		if r.code != f.status || r.header.Get("Retry-After") != f.retry {
			t.Errorf("%s %s: %d %v %s", c.method, c.path, r.code, r.header, r.body)
			continue
		}
		if err := r.apiErr(t); err.Code != f.code || strings.Contains(err.Message, "5432") {
			t.Errorf("%s %s: %+v", c.method, c.path, err)
		}
	}
	e.store.setFail(nil)
	metrics := string(e.must(200, "GET", "/metrics", nil).body)
	for _, want := range []string{`agentmem_store_errors_total{op="append"}`, `agentmem_store_errors_total{op="read"}`, `agentmem_store_errors_total{op="create"}`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if logs := e.logs.String(); !strings.Contains(logs, f.err.Error()) || !strings.Contains(logs, f.log) {
		t.Errorf("the store errors were not logged as %q: %s", f.log, logs)
	}
	// Back to normal.
	e.must(200, "GET", "/v1/sessions/s/context", nil)
}

func TestPanicIsRecovered(t *testing.T) {
	e := newEnv(t)
	e.store.panicOn.Store(true)
	r := e.must(500, "GET", "/v1/sessions/s", nil)
	if err := r.apiErr(t); err.Code != api.CodeInternal || strings.Contains(err.Message, "injected") {
		t.Errorf("panic: %+v", err)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, "injected panic") || !strings.Contains(logs, "goroutine") {
		t.Errorf("the panic's stack was not logged: %s", logs)
	}
	e.store.panicOn.Store(false)
	e.must(404, "GET", "/v1/sessions/s", nil)
}

func TestUnmatchedRoutes(t *testing.T) {
	e := newEnv(t)
	r := e.must(404, "GET", "/v2/sessions", nil)
	if err := r.apiErr(t); err.Code != api.CodeNotFound {
		t.Errorf("404: %+v", err)
	}
	r = e.must(405, "PUT", "/v1/sessions", nil)
	if err := r.apiErr(t); err.Code != api.CodeMethodNotAllowed || !strings.Contains(r.header.Get("Allow"), "POST") {
		t.Errorf("405: %+v %v", err, r.header)
	}
	e.must(405, "PATCH", "/v1/sessions/x/context", nil).apiErr(t)
	// HEAD works where GET does.
	e.must(200, "HEAD", "/healthz", nil)
}

func TestMetrics(t *testing.T) {
	e := newEnv(t)
	e.create("s")
	e.must(200, "GET", "/v1/sessions/s", nil)
	e.must(404, "GET", "/v1/sessions/t", nil)
	e.must(200, "GET", "/v1/sessions/s/context", nil)
	e.must(200, "GET", "/v1/sessions/s/context", nil)
	e.must(404, "GET", "/nowhere", nil)
	e.do("BREW", "/v1/sessions", nil)
	r := e.must(200, "GET", "/metrics", nil)
	m := string(r.body)
	for _, want := range []string{
		`agentmem_http_requests_total{method="GET",route="GET /v1/sessions/{id}",status="200"} 1`,
		`agentmem_http_requests_total{method="GET",route="GET /v1/sessions/{id}",status="404"} 1`,
		`agentmem_http_requests_total{method="POST",route="POST /v1/sessions",status="201"} 1`,
		`agentmem_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`agentmem_http_requests_total{method="other",route="unmatched",status="405"} 1`,
		`agentmem_http_request_duration_seconds_bucket{method="GET",route="GET /v1/sessions/{id}/context",status="200",le="+Inf"} 2`,
		`agentmem_session_cache_total{event="miss"} 1`,
		`agentmem_session_cache_total{event="hit"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestOpenAPIMatchesRoutes walks the mux's routes and the OpenAPI
// document and fails if either has a route the other lacks; it also
// checks that every $ref resolves.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	e := newEnv(t)
	r := e.must(200, "GET", "/v1/openapi.json", nil)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	r.json(t, &doc)
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
	var inDoc []string
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			if method == "parameters" {
				continue
			}
			inDoc = append(inDoc, strings.ToUpper(method)+" "+path)
			var op map[string]any
			if err := json.Unmarshal(raw, &op); err != nil || op["operationId"] == nil || op["responses"] == nil {
				t.Errorf("%s %s: no operationId or responses", method, path)
			}
		}
	}
	var inMux []string
	for _, rt := range e.srv.routeTable() {
		inMux = append(inMux, rt.pattern)
		// The mux really serves the pattern.
		method, path, _ := strings.Cut(rt.pattern, " ")
		req, _ := http.NewRequest(method, strings.ReplaceAll(path, "{id}", "x"), nil)
		if _, pat := e.srv.mux.Handler(req); pat != rt.pattern {
			t.Errorf("the mux serves %s with %q", rt.pattern, pat)
		}
	}
	slices.Sort(inDoc)
	slices.Sort(inMux)
	for _, p := range inMux {
		if !slices.Contains(inDoc, p) {
			t.Errorf("route %s is not in openapi.json", p)
		}
	}
	for _, p := range inDoc {
		if !slices.Contains(inMux, p) {
			t.Errorf("openapi.json documents %s, which the server does not serve", p)
		}
	}
	// Every reference resolves.
	var whole map[string]any
	if err := json.Unmarshal(OpenAPI(), &whole); err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`"\$ref":\s*"#/([^"]+)"`).FindAllStringSubmatch(string(OpenAPI()), -1) {
		var node any = whole
		for _, part := range strings.Split(m[1], "/") {
			obj, _ := node.(map[string]any)
			node = obj[part]
		}
		if node == nil {
			t.Errorf("dangling $ref %s", m[1])
		}
	}
}

func TestCanceledRequest(t *testing.T) {
	e := newEnv(t)
	e.session("s", 2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequest("GET", "/v1/sessions/s/context", nil).WithContext(ctx)
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	if rec.Code != statusClientClosed {
		t.Errorf("status %d", rec.Code)
	}
	m := string(e.must(200, "GET", "/metrics", nil).body)
	if !strings.Contains(m, `route="GET /v1/sessions/{id}/context",status="499"`) || strings.Contains(m, "agentmem_store_errors_total{") {
		t.Error("a canceled request counts as a store error, or is not counted as 499")
	}
}
