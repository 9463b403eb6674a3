package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/views"
)

// testNow is the clock of the servers of these tests.
var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return testNow }

// newTestServer serves the real server.Handler over a new memstore, both
// on clock, and returns it with the store.
func newTestServer(t *testing.T, clock func() time.Time, opts ...func(*server.Config)) (*httptest.Server, *store.Store) {
	t.Helper()
	mem := memstore.New(memstore.Options{Clock: clock})
	cfg := server.Config{Store: mem, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	stopIndex := func() {}
	if f := cfg.RecallFollower; f != nil { // withLongTerm
		stopIndex = views.Start(f, nil)
	}
	t.Cleanup(func() {
		ts.Close()
		stopIndex()
		srv.Close()
		mem.Close()
	})
	return ts, mem
}

// newClient returns a client of a new test server (see newTestServer).
func newClient(t *testing.T, copts []client.Option, sopts ...func(*server.Config)) *client.Client {
	t.Helper()
	ts, _ := newTestServer(t, fixedClock, sopts...)
	c, err := client.New(ts.URL, copts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// apiErr returns err as a *client.Error, failing the test if it is not.
func apiErr(t *testing.T, err error) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *client.Error", err, err)
	}
	return e
}

func task(id, text string) *agentmem.TaskStep {
	return &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: id, Time: testNow}, Task: text}
}

func TestNotFound(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil)
	_, err := c.GetSession(ctx, "missing")
	if !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("GetSession of a missing session: %v, want ErrNotFound", err)
	}
	if e := apiErr(t, err); e.Status != 404 || e.Code != api.CodeNotFound || e.Message == "" || e.Retryable() {
		t.Errorf("error %+v", e)
	}
	for what, err := range map[string]error{
		"DeleteSession": c.DeleteSession(ctx, "missing"),
		"AppendSteps": func() error {
			_, err := c.AppendSteps(ctx, "missing", steps(t, task("t1", "x")), client.AppendOptions{})
			return err
		}(),
		"ReadSteps": func() error { _, err := c.ReadSteps(ctx, "missing", client.ReadQuery{}); return err }(),
		"ReadLog":   func() error { _, err := c.ReadLog(ctx, "missing", 0, 0); return err }(),
		"Context": func() error {
			_, err := c.Context(ctx, "missing", client.ContextOptions{})
			return err
		}(),
		"Fork": func() error { _, err := c.Fork(ctx, "missing", api.ForkRequest{}); return err }(),
	} {
		if !errors.Is(err, client.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", what, err)
		}
	}
}

func TestConflictOnIfMatch(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil)
	if _, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	two := steps(t, task("a", "one"), task("b", "two"))
	resp, err := c.AppendSteps(ctx, "s", two, client.AppendOptions{IfMatch: new(int64)})
	if err != nil || resp.LastSeq != 2 || len(resp.Seqs) != 2 || resp.Seqs[1] != 2 {
		t.Fatalf("AppendSteps: %+v, %v", resp, err)
	}
	stale := int64(1)
	_, err = c.AppendSteps(ctx, "s", steps(t, task("c", "three")), client.AppendOptions{IfMatch: &stale})
	if !errors.Is(err, client.ErrConflict) {
		t.Fatalf("stale If-Match: %v, want ErrConflict", err)
	}
	e := apiErr(t, err)
	if e.Status != 409 || e.Code != api.CodeConflict || e.Field != "If-Match" || e.LastSeq == nil || *e.LastSeq != 2 {
		t.Errorf("error %+v", e)
	}
	// A retry of stored steps succeeds whatever If-Match says.
	if resp, err := c.AppendSteps(ctx, "s", two, client.AppendOptions{IfMatch: &stale}); err != nil || resp.Seqs[0] != 1 {
		t.Errorf("retry: %+v, %v", resp, err)
	}
	// Stored IDs for other steps are refused.
	if _, err := c.AppendSteps(ctx, "s", steps(t, task("a", "other")), client.AppendOptions{}); !errors.Is(err, client.ErrIDReused) || !errors.Is(err, client.ErrConflict) {
		t.Errorf("a reused step ID: %v", err)
	}
	// A taken ID is a conflict too, on the field id.
	_, err = c.CreateSession(ctx, api.CreateSessionRequest{ID: "s"})
	if e := apiErr(t, err); !errors.Is(err, client.ErrConflict) || e.Field != "id" {
		t.Errorf("CreateSession of a taken ID: %v", err)
	}
}

func TestAppendWithCompaction(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil)
	if _, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendSteps(ctx, "s", steps(t, task("a", "one")), client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	// The new step replaces the old one in the working set, in one write.
	working := []int64{-1}
	resp, err := c.AppendWithCompaction(ctx, "s", api.AppendStepsRequest{
		Steps:      steps(t, task("b", "two")),
		Compaction: &api.CompactionRecord{Working: &working, Removed: []int64{1}},
	}, client.AppendOptions{})
	if err != nil || fmt.Sprint(resp.Seqs) != "[2]" || resp.CompactionSeq != 3 || resp.LastSeq != 3 {
		t.Fatalf("AppendWithCompaction: %+v, %v", resp, err)
	}
	_, es := readLog(t, c, "s")
	if ws := store.WorkingSet(es); len(ws) != 1 || ws[0].Info().ID != "b" {
		t.Errorf("working set %v", ws)
	}
	if _, err := c.AppendWithCompaction(ctx, "s", api.AppendStepsRequest{}, client.AppendOptions{}); !errors.Is(err, client.ErrInvalid) || errors.As(err, new(*client.Error)) {
		t.Errorf("no compaction: %v", err)
	}
}

func TestInvalidWithField(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil)
	if _, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	// The server's 400: an unknown strategy.
	_, err := c.Compact(ctx, "s", client.CompactRequest{Strategy: "shrink"})
	if e := apiErr(t, err); !errors.Is(err, client.ErrInvalid) || e.Status != 400 || e.Code != api.CodeInvalid || e.Field != "strategy" {
		t.Errorf("Compact with a bad strategy: %v", err)
	}
	// A field of another strategy.
	_, err = c.Compact(ctx, "s", client.CompactRequest{Strategy: api.StrategyKeepLastN, N: client.Int(2), Budget: client.Int(9)})
	if e := apiErr(t, err); e.Status != 400 || e.Field != "budget" {
		t.Errorf("error %+v", e)
	}
	// A tool result without its call, in a list: the field is a path.
	_, err = c.AppendMessages(ctx, "s", []api.OpenAIMessage{
		{Role: "user", Content: "hi"},
		{Role: "tool", ToolCallID: "call_9", Content: "42"},
	}, client.AppendOptions{})
	if e := apiErr(t, err); e.Status != 400 || e.Field != "messages[1].tool_call_id" || !errors.Is(err, client.ErrInvalid) {
		t.Errorf("orphan tool result: %v", err)
	}
	// A step the server cannot decode.
	_, err = c.AppendSteps(ctx, "s", []json.RawMessage{json.RawMessage(`{"type":"task","task":"x","color":"red"}`)}, client.AppendOptions{})
	if e := apiErr(t, err); !errors.Is(err, client.ErrInvalid) || !strings.Contains(e.Field, "color") {
		t.Errorf("a step with an unknown field: %v", err)
	}
	// An empty ID is refused before anything is sent.
	if _, err := c.GetSession(ctx, ""); !errors.Is(err, client.ErrInvalid) || errors.As(err, new(*client.Error)) {
		t.Errorf("GetSession of an empty ID: %v", err)
	}
}

func TestUnauthorized(t *testing.T) {
	ctx := context.Background()
	keys := auth.NewKeys(auth.NewMemStore(), auth.KeysOptions{Clock: fixedClock})
	authn := auth.NewAuthenticator(keys, auth.AuthenticatorOptions{Require: true, CacheTTL: -1, Clock: fixedClock})
	token, _, err := keys.Create(ctx, "acme", "test")
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := newTestServer(t, fixedClock, func(c *server.Config) { c.Auth = authn })
	for name, opts := range map[string][]client.Option{
		"no key":    nil,
		"wrong key": {client.WithAPIKey("am_0123456789ab_wrongwrongwrongwrongwrong")},
	} {
		c, err := client.New(ts.URL, opts...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ListSessions(ctx, client.ListQuery{})
		if !errors.Is(err, client.ErrUnauthorized) {
			t.Fatalf("%s: %v, want ErrUnauthorized", name, err)
		}
		if e := apiErr(t, err); e.Status != 401 || e.Code != api.CodeUnauthorized {
			t.Errorf("%s: error %+v", name, e)
		}
	}
	// The right key reaches its tenant.
	c, err := client.New(ts.URL, client.WithAPIKey(token))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "s"}); err != nil || s.Tenant != "acme" {
		t.Errorf("CreateSession: %+v, %v", s, err)
	}
}

func TestBodyTooLarge(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil, func(c *server.Config) { c.MaxBodyBytes = 4096 })
	if _, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	_, err := c.AppendSteps(ctx, "s", steps(t, task("big", strings.Repeat("x", 10000))), client.AppendOptions{})
	if !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("too large: %v, want ErrInvalid", err)
	}
	if e := apiErr(t, err); e.Status != 413 || e.Code != api.CodeBodyTooLarge {
		t.Errorf("error %+v", e)
	}
	if r, err := c.ReadSteps(ctx, "s", client.ReadQuery{}); err != nil || len(r.Steps) != 0 {
		t.Errorf("a refused append stored something: %+v, %v", r, err)
	}
}

// flakyStore fails its next failures calls of Get, as a store outage
// would (an error marked transient, as the backends mark one); the server
// answers 503.
// With broken set, the failures are not marked transient: a failure
// nobody expected, which the server answers 500.
type flakyStore struct {
	store.Driver
	failures atomic.Int32
	gets     atomic.Int32
	deletes  atomic.Int32
	broken   atomic.Bool
}

func (f *flakyStore) Delete(ctx context.Context, tenant, id string) error {
	f.deletes.Add(1)
	if f.failures.Add(-1) >= 0 {
		return fmt.Errorf("%w: connection refused", agentmem.ErrUnavailable)
	}
	return f.Driver.Delete(ctx, tenant, id)
}

func (f *flakyStore) Get(ctx context.Context, tenant, id string) (*store.Session, error) {
	f.gets.Add(1)
	if f.failures.Add(-1) >= 0 {
		if f.broken.Load() {
			return nil, errors.New("stored session does not decode")
		}
		return nil, fmt.Errorf("%w: connection refused", agentmem.ErrUnavailable)
	}
	return f.Driver.Get(ctx, tenant, id)
}

func TestUnavailableRetryAfter(t *testing.T) {
	ctx := context.Background()
	var flaky *flakyStore
	wrap := func(c *server.Config) {
		flaky = &flakyStore{Driver: c.Store}
		c.Store = store.New(flaky)
	}
	ts, mem := newTestServer(t, fixedClock, wrap)
	if _, err := mem.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}

	// Without retries, the 503 surfaces, retryable, with Retry-After.
	c, err := client.New(ts.URL, client.WithRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	flaky.failures.Store(1)
	_, err = c.GetSession(ctx, "s")
	if !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("outage: %v, want ErrUnavailable", err)
	}
	e := apiErr(t, err)
	if e.Status != 503 || e.Code != api.CodeUnavailable || !e.Retryable() || e.RetryAfter != time.Second {
		t.Errorf("error %+v", e)
	}

	// With a retry, the client waits as Retry-After says and succeeds.
	c, err = client.New(ts.URL, client.WithRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	flaky.failures.Store(1)
	flaky.gets.Store(0)
	start := time.Now()
	if s, err := c.GetSession(ctx, "s"); err != nil || s.ID != "s" {
		t.Fatalf("GetSession after one failure: %+v, %v", s, err)
	}
	if d := time.Since(start); d < 900*time.Millisecond || flaky.gets.Load() != 2 {
		t.Errorf("retried after %v with %d gets; want Retry-After's 1s and 2", d, flaky.gets.Load())
	}

	// A write that is not safe to repeat is not retried.
	flaky.failures.Store(1)
	flaky.gets.Store(0)
	if err := c.DeleteSession(ctx, "s"); !errors.Is(err, client.ErrUnavailable) || flaky.deletes.Load() != 1 {
		t.Errorf("DeleteSession during an outage: %v after %d deletes", err, flaky.deletes.Load())
	}

	// A context that ends stops the wait.
	flaky.failures.Store(5)
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := c.GetSession(cctx, "s"); !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("GetSession with a short context: %v", err)
	}

	// A failure nobody expected is a 500, which is not retried.
	flaky.failures.Store(1)
	flaky.gets.Store(0)
	flaky.broken.Store(true)
	_, err = c.GetSession(ctx, "s")
	if errors.Is(err, client.ErrUnavailable) || flaky.gets.Load() != 1 {
		t.Errorf("GetSession of a broken store: %v after %d gets; want a 500 that is not retried", err, flaky.gets.Load())
	}
	if e := apiErr(t, err); e.Status != 500 || e.Code != api.CodeInternal || e.Retryable() || strings.Contains(e.Message, "decode") {
		t.Errorf("error %+v", e)
	}
}

func TestUnreachable(t *testing.T) {
	ts, _ := newTestServer(t, fixedClock)
	ts.Close()
	c, err := client.New(ts.URL, client.WithRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetSession(context.Background(), "s"); !errors.Is(err, client.ErrUnavailable) || errors.As(err, new(*client.Error)) {
		t.Errorf("unreachable server: %v", err)
	}
}

func TestNotConfigured(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil)
	// Routes of a server started without recall or facts: 501.
	_, err := c.SearchRecall(ctx, client.RecallQuery{Text: "x"})
	if !errors.Is(err, errors.ErrUnsupported) || apiErr(t, err).Code != api.CodeNotConfigured {
		t.Errorf("recall without an index: %v", err)
	}
	if _, err := c.SearchFacts(ctx, "u", client.FactsQuery{}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("facts without a memory: %v", err)
	}
}

func TestClosed(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); !errors.Is(err, client.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c.GetSession(ctx, "s"); !errors.Is(err, client.ErrClosed) {
		t.Errorf("GetSession after Close: %v", err)
	}
	if _, err := c.Context(ctx, "s", client.ContextOptions{}); !errors.Is(err, client.ErrClosed) {
		t.Errorf("Context after Close: %v", err)
	}
}

func TestMaxResponseBytes(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, []client.Option{client.WithMaxResponseBytes(200)})
	if _, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "s", Metadata: map[string]string{"a": strings.Repeat("v", 200), "b": strings.Repeat("v", 200)}}); err == nil || !strings.Contains(err.Error(), "larger than 200 bytes") {
		t.Errorf("an answer over the limit: %v", err)
	}
}

func TestNew(t *testing.T) {
	ctx := context.Background()
	for _, bad := range []string{"", "ftp://host", "http://", "http://u:p@host", "http://host?x=1", "::"} {
		if _, err := client.New(bad); err == nil {
			t.Errorf("New(%q) succeeded", bad)
		}
	}
	if _, err := client.New("http://h", client.WithAPIKey("a\nb")); err == nil {
		t.Error("an API key with a line break was accepted")
	}
	if _, err := client.New("http://h", client.WithHTTPClient(nil)); err == nil {
		t.Error("WithHTTPClient(nil) was accepted")
	}

	// The User-Agent and the key reach the server; a path prefix is kept.
	var gotUA, gotAuth, gotPath atomic.Value
	ts, _ := newTestServer(t, fixedClock)
	proxy := http.StripPrefix("/memory", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotUA.Store(r.UserAgent())
		gotAuth.Store(r.Header.Get("Authorization"))
		gotPath.Store(r.URL.Path)
		ts.Config.Handler.ServeHTTP(w, r)
	}))
	ps := newHTTPServer(t, proxy)
	c, err := client.New(ps.URL+"/memory/", client.WithUserAgent("test-agent/2"), client.WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if gotUA.Load() != "test-agent/2" || gotAuth.Load() != "Bearer k" || gotPath.Load() != "/v1/sessions" {
		t.Errorf("request: UA %v, Authorization %v, path %v", gotUA.Load(), gotAuth.Load(), gotPath.Load())
	}
}

// An error page that is not the API's (a proxy in front of the server)
// still gives an *Error with the status, and a 502 is retried.
func TestProxyErrorPage(t *testing.T) {
	ctx := context.Background()
	ts, _ := newTestServer(t, fixedClock)
	var fail atomic.Int32
	proxy := newHTTPServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Add(-1) >= 0 {
			http.Error(w, "<html>502 Bad Gateway</html>", http.StatusBadGateway)
			return
		}
		ts.Config.Handler.ServeHTTP(w, r)
	}))
	c, err := client.New(proxy.URL, client.WithRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	fail.Store(1)
	err = c.Ping(ctx)
	e := apiErr(t, err)
	if e.Status != 502 || e.Code != "" || !strings.Contains(e.Message, "Bad Gateway") || !e.Retryable() || !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("proxy error: %+v", e)
	}
	if err := c.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
	c, err = client.New(proxy.URL, client.WithRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	fail.Store(2)
	if l, err := c.ListSessions(ctx, client.ListQuery{}); err != nil || len(l.Sessions) != 0 {
		t.Errorf("ListSessions after two 502s: %+v, %v", l, err)
	}
}
