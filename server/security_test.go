package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/store"
)

// authEnv is a server that authenticates with keys of a MemStore.
type authEnv struct {
	*env
	keys *auth.Keys
}

// newAuthEnv returns a server whose Authenticator checks every key with
// the store (no cache), so revocations apply at once.
func newAuthEnv(t *testing.T, require bool, opts ...func(*Config)) *authEnv {
	t.Helper()
	keys := auth.NewKeys(auth.NewMemStore(), auth.KeysOptions{Clock: func() time.Time { return fixedNow }})
	a := auth.NewAuthenticator(keys, auth.AuthenticatorOptions{Require: require, CacheTTL: -1, Clock: func() time.Time { return fixedNow }})
	e := newEnv(t, append([]func(*Config){func(c *Config) { c.Auth = a }}, opts...)...)
	return &authEnv{env: e, keys: keys}
}

// key creates a key for tenant and returns its Authorization header value.
func (e *authEnv) key(tenant string) string {
	e.t.Helper()
	token, _, err := e.keys.Create(context.Background(), tenant, "")
	if err != nil {
		e.t.Fatal(err)
	}
	return "Bearer " + token
}

// send sends a request from remote to host with the given headers.
func (e *env) send(method, path, body, host, remote string, headers ...string) *response {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Host, req.RemoteAddr = host, remote
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	return &response{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// as sends a request with an Authorization header value.
func (e *env) as(authz, method, path, body string, headers ...string) *response {
	e.t.Helper()
	return e.send(method, path, body, "agentmem.example", "198.51.100.7:4000", append([]string{"Authorization", authz}, headers...)...)
}

// mustAs is as, failing unless the status is want.
func (e *env) mustAs(want int, authz, method, path, body string, headers ...string) *response {
	e.t.Helper()
	r := e.as(authz, method, path, body, headers...)
	if r.code != want {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.code, want, r.body)
	}
	return r
}

// unauthorized checks a 401 answer: JSON error, Bearer challenge.
func unauthorized(t *testing.T, r *response, invalidToken bool) {
	t.Helper()
	if r.code != 401 {
		t.Fatalf("status %d: %s", r.code, r.body)
	}
	if e := r.apiErr(t); e.Code != api.CodeUnauthorized || e.Field != "Authorization" || e.Message == "" {
		t.Errorf("401 body: %+v", e)
	}
	ch := r.header.Get("WWW-Authenticate")
	if !strings.HasPrefix(ch, `Bearer realm="agentmem"`) || strings.Contains(ch, "invalid_token") != invalidToken {
		t.Errorf("WWW-Authenticate %q (invalid token: %v)", ch, invalidToken)
	}
}

func TestKeysRequired(t *testing.T) {
	e := newAuthEnv(t, true)
	acme := e.key("acme")
	// Open routes need no key.
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/v1/openapi.json"} {
		if r := e.send("GET", p, "", "agentmem.example", "198.51.100.7:1"); r.code != 200 {
			t.Errorf("GET %s without a key: %d", p, r.code)
		}
	}
	before := e.dump()
	// Every other route does, even from loopback, and even unmatched ones.
	for _, rt := range e.srv.routeTable() {
		if rt.open {
			continue
		}
		method, path, _ := strings.Cut(rt.pattern, " ")
		path = strings.ReplaceAll(path, "{id}", "s")
		unauthorized(t, e.send(method, path, `{}`, "localhost:8080", "127.0.0.1:1"), false)
	}
	unauthorized(t, e.send("GET", "/v2/nowhere", "", "localhost", "127.0.0.1:1"), false)
	if e.dump() != before {
		t.Error("a refused request changed the store")
	}
	// A key works from anywhere.
	e.mustAs(201, acme, "POST", "/v1/sessions", `{"id":"s"}`)
	// A malformed, unknown or revoked key is 401 with invalid_token.
	unauthorized(t, e.as("Bearer nope", "GET", "/v1/sessions/s", ""), true)
	unauthorized(t, e.as("Basic YTpi", "GET", "/v1/sessions/s", ""), true)
	unauthorized(t, e.as("Bearer am_000000000000_"+strings.Repeat("A", 43), "GET", "/v1/sessions/s", ""), true)
	keys, _ := e.keys.List(context.Background(), "acme")
	if _, err := e.keys.Revoke(context.Background(), keys[0].ID); err != nil {
		t.Fatal(err)
	}
	r := e.as(acme, "GET", "/v1/sessions/s", "")
	unauthorized(t, r, true)
	if !strings.Contains(r.apiErr(t).Message, "revoked") {
		t.Errorf("revoked: %s", r.body)
	}
	m := string(e.must(200, "GET", "/metrics", nil).body)
	if !strings.Contains(m, `route="GET /v1/sessions/{id}",status="401"`) {
		t.Error("401s are not counted")
	}
	if !strings.Contains(e.logs.String(), "reason=revoked") || strings.Contains(e.logs.String(), acme[7:]) {
		t.Error("the refused key is not logged, or its secret is")
	}
}

// TestAnonymousOnLoopback: without Require and with no key, loopback
// requests are the default tenant; the first key turns enforcement on.
func TestAnonymousOnLoopback(t *testing.T) {
	e := newAuthEnv(t, false)
	if r := e.send("POST", "/v1/sessions", `{"id":"mine"}`, "localhost:8080", "127.0.0.1:5000"); r.code != 201 {
		t.Fatalf("anonymous create on loopback: %d %s", r.code, r.body)
	}
	var s store.Session
	e.send("GET", "/v1/sessions/mine", "", "127.0.0.1:8080", "127.0.0.1:5000").json(t, &s)
	if s.Tenant != "" {
		t.Errorf("tenant %q", s.Tenant)
	}
	// Not addressed to localhost (a rebound DNS name): refused.
	unauthorized(t, e.send("GET", "/v1/sessions/mine", "", "evil.example:8080", "127.0.0.1:5000"), false)
	// A key is honoured even while keys are optional.
	acme := e.key("acme")
	e.mustAs(201, acme, "POST", "/v1/sessions", `{"id":"theirs"}`)
	// Now that a key exists, anonymous requests are refused.
	unauthorized(t, e.send("GET", "/v1/sessions/mine", "", "localhost:8080", "127.0.0.1:5000"), false)
	// The default tenant's session is not acme's.
	e.mustAs(404, acme, "GET", "/v1/sessions/mine", "")
}

// probe is a request of the cross-tenant probe: a route with another
// tenant's session ID.
type probe struct {
	method, path, body string
	headers            []string
}

// probes returns a request for every route that takes a session ID, with
// a body the route would accept for its own tenant.
func probes(id string) map[string]probe {
	base := "/v1/sessions/" + id
	return map[string]probe{
		"GET /v1/sessions/{id}":                         {"GET", base, "", nil},
		"DELETE /v1/sessions/{id}":                      {"DELETE", base, "", nil},
		"POST /v1/sessions/{id}/fork":                   {"POST", base + "/fork", `{"at_seq":1,"id":"stolen"}`, nil},
		"POST /v1/sessions/{id}/steps":                  {"POST", base + "/steps", taskStep, []string{"Idempotency-Key", "k1"}},
		"GET /v1/sessions/{id}/steps":                   {"GET", base + "/steps", "", nil},
		"POST /v1/sessions/{id}/messages":               {"POST", base + "/messages", `{"role":"user","content":"hi"}`, nil},
		"GET /v1/sessions/{id}/context":                 {"GET", base + "/context?budget=8000", "", nil},
		"POST /v1/sessions/{id}/compact":                {"POST", base + "/compact", `{"strategy":"keep_last_n","n":1}`, nil},
		"POST /v1/sessions/{id}/pop":                    {"POST", base + "/pop", "", nil},
		"POST /v1/sessions/{id}/items":                  {"POST", base + "/items", `{"items":[{"role":"user","content":"hi"}]}`, nil},
		"GET /v1/sessions/{id}/items":                   {"GET", base + "/items?limit=5", "", nil},
		"POST /v1/sessions/{id}/items/pop":              {"POST", base + "/items/pop", "", nil},
		"DELETE /v1/sessions/{id}/items":                {"DELETE", base + "/items", "", nil},
		"GET /v1/sessions/{id}/blocks":                  {"GET", base + "/blocks", "", nil},
		"GET /v1/sessions/{id}/blocks/{label}":          {"GET", base + "/blocks/notes", "", nil},
		"PUT /v1/sessions/{id}/blocks/{label}":          {"PUT", base + "/blocks/notes", `{"value":"stolen"}`, nil},
		"DELETE /v1/sessions/{id}/blocks/{label}":       {"DELETE", base + "/blocks/notes", "", nil},
		"POST /v1/sessions/{id}/blocks/{label}/append":  {"POST", base + "/blocks/notes/append", `{"text":" more"}`, nil},
		"POST /v1/sessions/{id}/blocks/{label}/replace": {"POST", base + "/blocks/notes/replace", `{"old":"plan","new":"stolen"}`, nil},
		"GET /v1/sessions/{id}/blocks/{label}/history":  {"GET", base + "/blocks/notes/history", "", nil},
	}
}

// TestCrossTenantProbe uses tenant A's session IDs with tenant B's key on
// every route: each answers 404, byte for byte as for an ID that does not
// exist, and nothing changes. A new route that takes an ID must be added
// to probes, or this test fails.
func TestCrossTenantProbe(t *testing.T) {
	e := newAuthEnv(t, true, withBlocks)
	a, b := e.key("tenant-a"), e.key("tenant-b")
	e.mustAs(201, a, "POST", "/v1/sessions", `{"id":"a1","user_id":"u1"}`)
	e.mustAs(201, a, "PUT", "/v1/sessions/a1/blocks/notes", `{"value":"the plan"}`)
	e.mustAs(201, a, "POST", "/v1/sessions/a1/steps", "["+sysStep+","+taskStep+","+actionStep(1, "out")+","+actionStep(2, "out")+"]")
	e.mustAs(200, a, "POST", "/v1/sessions/a1/compact", `{"strategy":"keep_last_n","n":1}`)
	e.mustAs(201, a, "POST", "/v1/sessions/a1/fork", `{"at_seq":3,"id":"a1-branch"}`)
	// A's context is in the cache: B must not be served from it.
	e.mustAs(200, a, "GET", "/v1/sessions/a1/context", "")
	e.mustAs(200, a, "GET", "/v1/sessions/a1-branch/context", "")
	e.mustAs(201, b, "POST", "/v1/sessions", `{"id":"b1","user_id":"u1"}`)

	before := e.dump()
	table := probes("a1")
	for _, rt := range e.srv.routeTable() {
		if rt.open || !strings.Contains(rt.pattern, "{id}") {
			continue
		}
		p, ok := table[rt.pattern]
		if !ok {
			t.Errorf("route %s has no cross-tenant probe: add it to probes", rt.pattern)
			continue
		}
		for _, id := range []string{"a1", "a1-branch"} {
			path := strings.Replace(p.path, "/a1", "/"+id, 1)
			got := e.as(b, p.method, path, p.body, p.headers...)
			// The same request for an ID nobody has.
			missing := e.as(b, p.method, strings.Replace(path, "/"+id, "/nobody", 1), p.body, p.headers...)
			if got.code != 404 {
				t.Errorf("%s %s with B's key: %d %s", p.method, path, got.code, got.body)
				continue
			}
			want := bytes.ReplaceAll(missing.body, []byte("nobody"), []byte(id))
			if !bytes.Equal(got.body, want) {
				t.Errorf("%s %s: B can tell A's session from a missing one:\n%s\n%s", p.method, path, got.body, missing.body)
			}
			if got.header.Get("ETag") != "" || got.header.Get("Location") != "" {
				t.Errorf("%s %s: headers leak: %v", p.method, path, got.header)
			}
		}
	}
	// The list route: B sees only its own sessions, whatever the filters.
	for _, q := range []string{"", "?user_id=u1", "?page_size=1"} {
		var l api.ListSessionsResponse
		e.mustAs(200, b, "GET", "/v1/sessions"+q, "").json(t, &l)
		if len(l.Sessions) != 1 || l.Sessions[0].ID != "b1" || l.Sessions[0].Tenant != "tenant-b" {
			t.Errorf("B lists %s: %+v", q, l.Sessions)
		}
	}
	if after := e.dump(); after != before {
		t.Errorf("B's probes changed the store:\n%s\n%s", before, after)
	}
	// Session IDs are per tenant: A's IDs are as free to B as any other,
	// to create and to fork into, and what B makes there is B's alone.
	var mine store.Session
	e.mustAs(201, b, "POST", "/v1/sessions", `{"id":"a1"}`).json(t, &mine)
	if mine.Tenant != "tenant-b" || mine.LastSeq != 0 {
		t.Errorf("B's a1: %+v", mine)
	}
	e.mustAs(201, b, "POST", "/v1/sessions/b1/steps", taskStep)
	var f store.Session
	e.mustAs(201, b, "POST", "/v1/sessions/b1/fork", `{"id":"a1-branch"}`).json(t, &f)
	if f.Tenant != "tenant-b" || f.ParentID != "b1" {
		t.Errorf("a fork's tenant: %+v", f)
	}
	e.mustAs(409, b, "POST", "/v1/sessions", `{"id":"a1"}`) // B's own ID now
	e.mustAs(201, b, "POST", "/v1/sessions/a1/steps", taskStep)
	// A still reaches all of its own, unchanged.
	var got readSteps
	e.mustAs(200, a, "GET", "/v1/sessions/a1/steps", "").json(t, &got)
	var sa store.Session
	e.mustAs(200, a, "GET", "/v1/sessions/a1", "").json(t, &sa)
	if sa.Tenant != "tenant-a" || sa.UserID != "u1" || sa.LastSeq != got.LastSeq || got.LastSeq != 5 {
		t.Errorf("A's a1 after B's: %+v, last seq %d", sa, got.LastSeq)
	}
	var sb store.Session
	e.mustAs(200, a, "GET", "/v1/sessions/a1-branch", "").json(t, &sb)
	if sb.ParentID != "a1" || sb.Tenant != "tenant-a" {
		t.Errorf("A's branch after B's fork: %+v", sb)
	}
}

// TestCacheIsPerTenant: a session cached for one tenant, deleted and
// created again under the same ID by another, is served to the new owner
// only.
func TestCacheIsPerTenant(t *testing.T) {
	e := newAuthEnv(t, true)
	a, b := e.key("tenant-a"), e.key("tenant-b")
	e.mustAs(201, a, "POST", "/v1/sessions", `{"id":"x"}`)
	e.mustAs(201, a, "POST", "/v1/sessions/x/steps", "["+sysStep+","+taskStep+"]")
	e.mustAs(200, a, "GET", "/v1/sessions/x/context", "")
	e.mustAs(204, a, "DELETE", "/v1/sessions/x", "")
	// Created again by B behind the server's back (another server).
	if _, err := e.mem.Create(context.Background(), store.CreateRequest{ID: "x", Tenant: "tenant-b"}); err != nil {
		t.Fatal(err)
	}
	e.mustAs(201, b, "POST", "/v1/sessions/x/steps", `{"type":"task","task":"B's task"}`)
	e.mustAs(404, a, "GET", "/v1/sessions/x/context", "")
	var c api.ContextResponse
	e.mustAs(200, b, "GET", "/v1/sessions/x/context", "").json(t, &c)
	if !strings.Contains(string(mustJSON(t, c.Messages)), "B's task") || strings.Contains(string(mustJSON(t, c.Messages)), "careful coding agent") {
		t.Errorf("B's context: %s", mustJSON(t, c.Messages))
	}
	e.mustAs(404, a, "GET", "/v1/sessions/x/context", "")
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDefaultTenantList: the store does not filter by the default tenant
// "", so the server drops other tenants' sessions from the page, reading
// on until the page is full.
func TestDefaultTenantList(t *testing.T) {
	e := newEnv(t) // no Auth: every request is the default tenant
	ctx := context.Background()
	for i := range 30 {
		tenant := "other"
		if i%10 == 0 {
			tenant = ""
		}
		if _, err := e.mem.Create(ctx, store.CreateRequest{ID: "s" + itoa(i), Tenant: tenant}); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	token := ""
	for range 10 {
		var l api.ListSessionsResponse
		e.must(200, "GET", "/v1/sessions?page_size=2&page_token="+token, nil).json(t, &l)
		for _, s := range l.Sessions {
			ids = append(ids, s.ID)
			if s.Tenant != "" {
				t.Errorf("listed %s of tenant %q", s.ID, s.Tenant)
			}
		}
		if token = l.NextPageToken; token == "" {
			break
		}
	}
	slices.Sort(ids)
	if strings.Join(ids, ",") != "s0,s10,s20" {
		t.Errorf("listed %v", ids)
	}
	e.must(404, "GET", "/v1/sessions/s1", nil)
	e.must(404, "GET", "/v1/sessions/s1/context", nil)
	e.must(200, "GET", "/v1/sessions/s10", nil)
}

func TestCORS(t *testing.T) {
	const app = "https://app.example"
	e := newAuthEnv(t, true, func(c *Config) { c.CORSOrigins = []string{app, "http://localhost:3000"} })
	key := e.key("acme")
	// Preflight from an allowed origin: no key needed, 204 with the rules.
	r := e.send("OPTIONS", "/v1/sessions", "", "api.example", "198.51.100.7:1",
		"Origin", app, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type")
	h := r.header
	if r.code != 204 || h.Get("Access-Control-Allow-Origin") != app || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Content-Type") || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "DELETE") ||
		h.Get("Access-Control-Allow-Credentials") != "" || !slices.Contains(h.Values("Vary"), "Origin") {
		t.Errorf("allowed preflight: %d %v", r.code, h)
	}
	// From another origin, or for a method the API lacks: 403, no grant.
	for _, hs := range [][]string{
		{"Origin", "https://evil.example", "Access-Control-Request-Method", "POST"},
		{"Origin", "https://app.example.evil.example", "Access-Control-Request-Method", "GET"},
		{"Origin", "http://app.example", "Access-Control-Request-Method", "GET"},
		{"Origin", app, "Access-Control-Request-Method", "PUT"},
	} {
		r := e.send("OPTIONS", "/v1/sessions", "", "api.example", "198.51.100.7:1", hs...)
		if r.code != 403 || r.apiErr(t).Code != api.CodeForbidden || (hs[1] != app && r.header.Get("Access-Control-Allow-Origin") != "") {
			t.Errorf("refused preflight %v: %d %v", hs, r.code, r.header)
		}
	}
	// An allowed origin's requests carry the grant, errors included.
	r = e.mustAs(201, key, "POST", "/v1/sessions", `{"id":"c"}`, "Origin", app, "Sec-Fetch-Site", "cross-site")
	if r.header.Get("Access-Control-Allow-Origin") != app || !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "ETag") {
		t.Errorf("allowed request: %v", r.header)
	}
	r = e.send("GET", "/v1/sessions/c", "", "api.example", "198.51.100.7:1", "Origin", app)
	if r.code != 401 || r.header.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("a 401 to an allowed origin: %d %v", r.code, r.header)
	}
	// Another origin: reads get no grant (the browser hides them) and
	// writes are refused before they run.
	r = e.mustAs(200, key, "GET", "/v1/sessions/c", "", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
	if r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("a read from another origin got a grant: %v", r.header)
	}
	before := e.dump()
	for _, p := range []probe{
		{"POST", "/v1/sessions", `{"id":"csrf"}`, nil},
		{"DELETE", "/v1/sessions/c", "", nil},
		{"POST", "/v1/sessions/c/steps", taskStep, nil},
	} {
		r := e.as(key, p.method, p.path, p.body, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
		if r.code != 403 || r.apiErr(t).Code != api.CodeForbidden {
			t.Errorf("cross-origin %s %s: %d %s", p.method, p.path, r.code, r.body)
		}
	}
	if e.dump() != before {
		t.Error("a refused cross-origin write changed the store")
	}
}

func TestCORSOff(t *testing.T) {
	e := newEnv(t) // no origins, no Auth
	r := e.do("OPTIONS", "/v1/sessions", nil, "Origin", "https://app.example", "Access-Control-Request-Method", "POST")
	if r.code == 204 || r.header.Get("Access-Control-Allow-Origin") != "" || r.header.Get("Access-Control-Allow-Methods") != "" {
		t.Errorf("preflight with CORS off: %d %v", r.code, r.header)
	}
	r = e.do("GET", "/v1/sessions", nil, "Origin", "https://app.example")
	if r.code != 200 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("read with CORS off: %d %v", r.code, r.header)
	}
	// A page of another site cannot write to a server on localhost
	// without keys (a form post, or fetch with no-cors).
	before := e.dump()
	r = e.do("POST", "/v1/sessions", `{"id":"csrf"}`, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
	if r.code != 403 || e.dump() != before {
		t.Errorf("cross-site write with CORS off: %d", r.code)
	}
	// The server's own origin (a same-origin page) and non-browser
	// clients write as usual.
	e.must(201, "POST", "/v1/sessions", `{"id":"same"}`, "Sec-Fetch-Site", "same-origin", "Origin", "http://example.com")
	e.must(201, "POST", "/v1/sessions", `{"id":"cli"}`)
}

func TestCORSConfig(t *testing.T) {
	for _, bad := range []string{"*", "https://*.example", "https://app.example/", "https://app.example/path", "app.example", "HTTPS://APP.EXAMPLE", "ftp://app.example", "null", "https://u@app.example"} {
		e := &env{t: t}
		_ = e
		if _, err := New(Config{Store: newEnv(t).mem, CORSOrigins: []string{bad}}); err == nil {
			t.Errorf("origin %q accepted", bad)
		}
	}
	if _, err := New(Config{Store: newEnv(t).mem, CORSOrigins: []string{"https://app.example", "http://127.0.0.1:5173", "http://[::1]:8080"}}); err != nil {
		t.Error(err)
	}
}

// TestOpenAPISecurity: the document declares the bearer scheme, every
// route that needs a key documents 401, and the open ones say they need
// none, matching the route table.
func TestOpenAPISecurity(t *testing.T) {
	var doc struct {
		Security   []map[string][]string `json:"security"`
		Components struct {
			SecuritySchemes map[string]struct{ Type, Scheme string } `json:"securitySchemes"`
		} `json:"components"`
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	if s := doc.Components.SecuritySchemes["bearerAuth"]; s.Type != "http" || s.Scheme != "bearer" || len(doc.Security) != 1 {
		t.Fatalf("security scheme: %+v %v", doc.Components.SecuritySchemes, doc.Security)
	}
	e := newEnv(t)
	for _, rt := range e.srv.routeTable() {
		method, path, _ := strings.Cut(rt.pattern, " ")
		var op struct {
			Security  *[]any                     `json:"security"`
			Responses map[string]json.RawMessage `json:"responses"`
		}
		if err := json.Unmarshal(doc.Paths[path][strings.ToLower(method)], &op); err != nil {
			t.Fatalf("%s: %v", rt.pattern, err)
		}
		open := op.Security != nil && len(*op.Security) == 0
		if open != rt.open {
			t.Errorf("%s: open in the document %v, in the server %v", rt.pattern, open, rt.open)
		}
		if _, has401 := op.Responses["401"]; has401 == rt.open {
			t.Errorf("%s: documents 401: %v", rt.pattern, has401)
		}
	}
}

// TestTenantOfHandlers: Tenant reads the identity the guard stored.
func TestTenantOfHandlers(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	if Tenant(r) != "" {
		t.Error("no identity: not the default tenant")
	}
	r = r.WithContext(auth.NewContext(r.Context(), auth.Identity{Tenant: "acme", KeyID: "0123456789ab"}))
	if Tenant(r) != "acme" {
		t.Error(Tenant(r))
	}
	_ = http.StatusOK
}
