package remote_test

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/agentmem/agentmem/client/remote"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/store"
)

// testNow is the clock of the servers of these tests.
var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return testNow }

// newStore returns the portable store of a new test server (see
// newTestServer), and its driver.
func newStore(t *testing.T, copts []client.Option, sopts ...func(*server.Config)) (*store.Store, *remote.Store) {
	t.Helper()
	ts, _ := newTestServer(t, fixedClock, sopts...)
	c, err := client.New(ts.URL, copts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	d := remote.NewDriver(c)
	return store.New(d), d
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
	c, d := newStore(t, nil)
	_, err := c.Get(ctx, "", "missing")
	if !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("Get of a missing session: %v, want ErrNotFound", err)
	}
	if e := apiErr(t, err); e.Status != 404 || e.Code != api.CodeNotFound || e.Message == "" || e.Retryable() {
		t.Errorf("error %+v", e)
	}
	for what, err := range map[string]error{
		"Delete": c.Delete(ctx, "", "missing"),
		"Append": func() error {
			_, err := c.Append(ctx, store.AppendRequest{SessionID: "missing", Steps: []agentmem.Step{task("t1", "x")}})
			return err
		}(),
		"Read": func() error { _, err := c.Read(ctx, store.ReadRequest{SessionID: "missing"}); return err }(),
		"Context": func() error {
			_, err := d.Client().Context(ctx, "missing", client.ContextOptions{})
			return remote.MapError(err)
		}(),
		"Fork": func() error { _, err := c.Create(ctx, store.CreateRequest{ParentID: "missing"}); return err }(),
	} {
		if !errors.Is(err, agentmem.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", what, err)
		}
	}
}

func TestConflictOnIfMatch(t *testing.T) {
	ctx := context.Background()
	c, _ := newStore(t, nil)
	if _, err := c.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{task("a", "one"), task("b", "two")}, ExpectedLastSeq: new(int64)})
	if err != nil || resp.LastSeq != 2 || len(resp.Seqs) != 2 || resp.Seqs[1] != 2 {
		t.Fatalf("Append: %+v, %v", resp, err)
	}
	stale := int64(1)
	_, err = c.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{task("c", "three")}, ExpectedLastSeq: &stale})
	if !errors.Is(err, agentmem.ErrConflict) {
		t.Fatalf("stale If-Match: %v, want ErrConflict", err)
	}
	e := apiErr(t, err)
	if e.Status != 409 || e.Code != api.CodeConflict || e.Field != "If-Match" || e.LastSeq == nil || *e.LastSeq != 2 {
		t.Errorf("error %+v", e)
	}
	// A retry of stored steps succeeds whatever If-Match says.
	if resp, err := c.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{task("a", "one"), task("b", "two")}, ExpectedLastSeq: &stale}); err != nil || resp.Seqs[0] != 1 {
		t.Errorf("retry: %+v, %v", resp, err)
	}
	// A taken ID is a conflict too.
	if _, err := c.Create(ctx, store.CreateRequest{ID: "s"}); !errors.Is(err, agentmem.ErrConflict) {
		t.Errorf("Create of a taken ID: %v", err)
	}
}

func TestInvalidWithField(t *testing.T) {
	ctx := context.Background()
	c, d := newStore(t, nil)
	if _, err := c.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	// The server's 400: an unknown strategy.
	_, err := d.Client().Compact(ctx, "s", client.CompactRequest{Strategy: "shrink"})
	err = remote.MapError(err)
	var inv *agentmem.InvalidError
	if !errors.Is(err, agentmem.ErrInvalid) || !errors.As(err, &inv) || inv.Field != "strategy" {
		t.Fatalf("Compact with a bad strategy: %v", err)
	}
	if e := apiErr(t, err); e.Status != 400 || e.Code != api.CodeInvalid || e.Field != "strategy" {
		t.Errorf("error %+v", e)
	}
	// A field of another strategy.
	_, err = d.Client().Compact(ctx, "s", client.CompactRequest{Strategy: api.StrategyKeepLastN, N: client.Int(2), Budget: client.Int(9)})
	if e := apiErr(t, err); e.Status != 400 || e.Field != "budget" {
		t.Errorf("error %+v", e)
	}
	// A tool result without its call, in a list: the field is a path.
	_, err = d.AppendMessages(ctx, "s", []agentmem.Message{
		{Role: agentmem.RoleUser, Content: agentmem.Text("hi")},
		{Role: agentmem.RoleTool, ToolCallID: "call_9", Content: agentmem.Text("42")},
	}, client.AppendOptions{})
	if e := apiErr(t, err); e.Status != 400 || e.Field != "messages[1].tool_call_id" || !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("orphan tool result: %v", err)
	}
	// Input a store would refuse is refused before anything is sent, with
	// the store's own error.
	_, err = store.New(c).Get(ctx, "", "..")
	if !errors.Is(err, agentmem.ErrInvalid) || errors.As(err, new(*client.Error)) {
		t.Errorf("Get of a bad ID: %v", err)
	}
}

// TestTenants: a Store learns its key's tenant and refuses requests for
// another.
func TestTenants(t *testing.T) {
	ctx := context.Background()
	keys := auth.NewKeys(auth.NewMemStore(), auth.KeysOptions{Clock: fixedClock})
	authn := auth.NewAuthenticator(keys, auth.AuthenticatorOptions{Require: true, CacheTTL: -1, Clock: fixedClock})
	withAuth := func(c *server.Config) { c.Auth = authn }
	token, _, err := keys.Create(ctx, "acme", "test")
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := newTestServer(t, fixedClock, withAuth)

	// The right key reaches its tenant, which the client then knows.
	cl, err := client.New(ts.URL, client.WithAPIKey(token))
	if err != nil {
		t.Fatal(err)
	}
	c := remote.New(cl)
	if _, err := c.Create(ctx, store.CreateRequest{ID: "s", Tenant: "acme"}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Create with a tenant before the client knows its own: %v", err)
	}
	s, err := c.Create(ctx, store.CreateRequest{ID: "s", UserID: "u"})
	if err != nil || s.Tenant != "acme" {
		t.Fatalf("Create: %+v, %v", s, err)
	}
	if _, err := c.Create(ctx, store.CreateRequest{ID: "s2", Tenant: "acme"}); err != nil {
		t.Errorf("Create in the key's tenant: %v", err)
	}
	if _, err := c.Create(ctx, store.CreateRequest{ID: "s3", Tenant: "other"}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Create in another tenant: %v", err)
	}
	// A wrong WithTenant: the session lands in the key's tenant, and the
	// client takes it back.
	wcl, err := client.New(ts.URL, client.WithAPIKey(token))
	if err != nil {
		t.Fatal(err)
	}
	wrong := remote.New(wcl, remote.WithTenant("other"))
	if _, err := wrong.Create(ctx, store.CreateRequest{ID: "s4", Tenant: "other"}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Create with a wrong WithTenant: %v", err)
	}
	if _, err := c.Get(ctx, "", "s4"); !errors.Is(err, agentmem.ErrNotFound) {
		t.Errorf("the session created under a wrong WithTenant is still there: %v", err)
	}
	for tenant, want := range map[string]int{"": 2, "acme": 2, "other": 0} {
		l, err := c.List(ctx, store.ListRequest{Tenant: tenant})
		if err != nil || len(l.Sessions) != want {
			t.Errorf("List tenant %q: %+v, %v", tenant, l, err)
		}
	}
}

func TestBodyTooLarge(t *testing.T) {
	ctx := context.Background()
	c, _ := newStore(t, nil, func(c *server.Config) { c.MaxBodyBytes = 4096 })
	if _, err := c.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{task("big", strings.Repeat("x", 10000))}})
	if !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("too large: %v, want ErrInvalid", err)
	}
	if e := apiErr(t, err); e.Status != 413 || e.Code != api.CodeBodyTooLarge {
		t.Errorf("error %+v", e)
	}
	if r, err := c.Read(ctx, store.ReadRequest{SessionID: "s"}); err != nil || len(r.Entries) != 0 {
		t.Errorf("a refused append stored something: %+v, %v", r, err)
	}
}

func TestUnsupported(t *testing.T) {
	ctx := context.Background()
	c, d := newStore(t, nil)
	if _, err := c.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	var ue *remote.UnsupportedError
	if _, err := c.Prune(ctx, store.PruneRequest{}); !errors.Is(err, errors.ErrUnsupported) || !errors.As(err, &ue) || ue.Op != "Prune" {
		t.Errorf("Prune: %v", err)
	}
	// An append with a compaction record goes through the route's
	// envelope form.
	resp, err := c.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{task("a", "x")},
		Compaction: &store.CompactionRecord{Working: []int64{store.NewStepRef(0)}}})
	if err != nil || resp.CompactionSeq != 2 || fmt.Sprint(resp.Seqs) != "[1]" {
		t.Errorf("Append with a compaction: %+v %v", resp, err)
	}
	if _, err := c.Create(ctx, store.CreateRequest{ID: "t", TTL: 1500 * time.Millisecond}); !errors.As(err, &ue) {
		t.Errorf("Create with a sub-second TTL: %v", err)
	}
	if _, err := c.Create(ctx, store.CreateRequest{ID: "b", ParentID: "s", Agent: "other"}); !errors.As(err, &ue) {
		t.Errorf("branch with another agent: %v", err)
	}
	// Routes of a server started without recall or facts: 501.
	_, err = d.Client().SearchRecall(ctx, client.RecallQuery{Text: "x"})
	if !errors.Is(err, errors.ErrUnsupported) || apiErr(t, err).Code != api.CodeNotConfigured {
		t.Errorf("recall without an index: %v", err)
	}
	if _, err := d.Client().SearchFacts(ctx, "u", client.FactsQuery{}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("facts without a memory: %v", err)
	}
	// Nothing was written by the refused calls.
	if l, err := c.List(ctx, store.ListRequest{}); err != nil || len(l.Sessions) != 1 {
		t.Errorf("List: %+v, %v", l, err)
	}
}

func TestClosed(t *testing.T) {
	ctx := context.Background()
	c, d := newStore(t, nil)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); !errors.Is(err, store.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c.Get(ctx, "", "s"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
	if _, err := d.Client().Context(ctx, "s", client.ContextOptions{}); !errors.Is(err, client.ErrClosed) || !errors.Is(remote.MapError(err), store.ErrClosed) {
		t.Errorf("Context after Close: %v", err)
	}
}

// TestOpen: store.Open with an http URL returns a Store of the server,
// with the key and the options of its parameters.
func TestOpen(t *testing.T) {
	ctx := context.Background()
	var gotAuth atomic.Value
	ts, mem := newTestServer(t, fixedClock)
	if _, err := mem.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	proxy := http.StripPrefix("/memory", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth.Store(r.Header.Get("Authorization"))
		ts.Config.Handler.ServeHTTP(w, r)
	}))
	ps := httptest.NewServer(proxy)
	defer ps.Close()
	st, err := store.Open(ctx, ps.URL+"/memory?api_key=k&retries=0")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if d := (*remote.Store)(nil); !st.As(&d) {
		t.Fatalf("store.Open returned %v", st)
	}
	if s, err := st.Get(ctx, "", "s"); err != nil || s.ID != "s" || gotAuth.Load() != "Bearer k" {
		t.Errorf("Get through store.Open: %+v, %v (Authorization %v)", s, err, gotAuth.Load())
	}
	for _, bad := range []string{"?retries=-1", "?apikey=k", "?api_key=a&api_key=b"} {
		if _, err := store.Open(ctx, ps.URL+bad); err == nil {
			t.Errorf("store.Open(%q) succeeded", bad)
		} else if strings.Contains(err.Error(), "api_key=") {
			t.Errorf("the error shows the key: %v", err)
		}
	}
}

// TestUnreachable: a server that cannot be reached is a transient
// failure, as a store's outage is.
func TestUnreachable(t *testing.T) {
	ts, _ := newTestServer(t, fixedClock)
	ts.Close()
	c, err := client.New(ts.URL, client.WithRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	_, err = remote.New(c).Get(context.Background(), "", "s")
	if !errors.Is(err, agentmem.ErrUnavailable) || !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("unreachable server: %v", err)
	}
}
