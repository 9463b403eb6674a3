package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/mcp"
	"github.com/agentmem/agentmem/store/memstore"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// keys maps the test's API keys to tenants, as the server's
// authentication would.
var keys = map[string]string{"key-acme": "acme", "key-globex": "globex"}

// tenantOf is a TenantFunc over keys.
func tenantOf(r *http.Request) (string, error) {
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if t, ok := keys[key]; ok {
		return t, nil
	}
	return "", errors.New("a valid API key is required (Authorization: Bearer KEY)")
}

// bearer adds an Authorization header to every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// httpClient connects the SDK's streamable HTTP client to url with key.
func httpClient(t *testing.T, url, key string) (*sdk.ClientSession, error) {
	t.Helper()
	tr := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{key}, Timeout: 10 * time.Second}, MaxRetries: -1}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "http-test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func TestHTTPHandler(t *testing.T) {
	st := memstore.New(memstore.Options{})
	defer st.Close()
	srv, err := mcp.New(mcp.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewHTTPHandler(srv, tenantOf))
	hs := httptest.NewServer(mux)
	defer hs.Close()
	url := hs.URL + "/mcp"

	acme, err := httpClient(t, url, "key-acme")
	if err != nil {
		t.Fatal(err)
	}
	tools, err := acme.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) < 4 {
		t.Fatalf("tools over HTTP: %v, %v", tools, err)
	}
	call(t, acme, mcp.ToolCreateSession, map[string]any{"id": "web"}, nil)
	call(t, acme, mcp.ToolAppend, map[string]any{"session_id": "web", "messages": turn}, nil)
	var c mcp.ContextOutput
	call(t, acme, mcp.ToolGetContext, map[string]any{"session_id": "web", "budget": 8000}, &c)
	if c.LastSeq != 4 || len(c.Steps) != 4 {
		t.Errorf("context over HTTP: %+v", c)
	}
	if s, err := st.Get(context.Background(), "acme", "web"); err != nil || s.Tenant != "acme" {
		t.Fatalf("the session is not acme's: %+v, %v", s, err)
	}

	// Each request acts for its own key's tenant.
	globex, err := httpClient(t, url, "key-globex")
	if err != nil {
		t.Fatal(err)
	}
	callErr(t, globex, mcp.ToolGetContext, map[string]any{"session_id": "web"}, `session "web" does not exist`)
	var l mcp.ListSessionsOutput
	call(t, globex, mcp.ToolListSessions, map[string]any{}, &l)
	if len(l.Sessions) != 0 {
		t.Errorf("globex lists %+v", l.Sessions)
	}

	// No key: refused before any MCP handling.
	if _, err := httpClient(t, url, "wrong"); err == nil {
		t.Error("a client with a wrong key connected")
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != http.StatusUnauthorized ||
		e.Error.Code != "unauthorized" || !strings.Contains(e.Error.Message, "API key") || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("without a key: %d %+v %v", resp.StatusCode, e, err)
	}
}

func TestHTTPHandlerDefaultTenant(t *testing.T) {
	st := memstore.New(memstore.Options{})
	defer st.Close()
	srv, err := mcp.New(mcp.Config{Store: st, Tenant: "solo"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	defer hs.Close()
	cs, err := httpClient(t, hs.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	call(t, cs, mcp.ToolCreateSession, map[string]any{"id": "x"}, nil)
	if s, err := st.Get(context.Background(), "solo", "x"); err != nil || s.Tenant != "solo" {
		t.Errorf("session %+v, %v", s, err)
	}
}

// Over HTTP the long-term tools act for the tenant of each request's key
// too.
func TestHTTPHandlerLongTerm(t *testing.T) {
	lt := newLongTerm(t)
	srv, err := mcp.New(mcp.Config{Store: lt.st, Facts: lt.facts, Recall: lt.ix, RecallFollower: lt.follow})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(mcp.NewHTTPHandler(srv, tenantOf))
	defer hs.Close()
	acme, err := httpClient(t, hs.URL, "key-acme")
	if err != nil {
		t.Fatal(err)
	}
	globex, err := httpClient(t, hs.URL, "key-globex")
	if err != nil {
		t.Fatal(err)
	}
	var rem mcp.RememberOutput
	call(t, acme, mcp.ToolRemember, map[string]any{"user_id": "alice", "text": "Speaks Portuguese."}, &rem)
	call(t, acme, mcp.ToolCreateSession, map[string]any{"id": "web", "user_id": "alice"}, nil)
	call(t, acme, mcp.ToolAppend, map[string]any{"session_id": "web", "messages": turn}, nil)
	var found mcp.SearchMemoryOutput
	call(t, acme, mcp.ToolSearchMemory, map[string]any{"query": "main function"}, &found)
	if len(found.Hits) == 0 || found.Hits[0].SessionID != "web" {
		t.Errorf("acme's search: %+v", found)
	}
	if f, err := lt.facts.Get(context.Background(), "acme", rem.Fact.ID); err != nil || !strings.HasPrefix(f.Source.Agent, "mcp") {
		t.Errorf("acme's fact: %+v, %v", f, err)
	}

	var facts mcp.RecallFactsOutput
	call(t, globex, mcp.ToolRecallFacts, map[string]any{"user_id": "alice"}, &facts)
	call(t, globex, mcp.ToolSearchMemory, map[string]any{"query": "main function"}, &found)
	if len(facts.Facts) != 0 || len(found.Hits) != 0 {
		t.Errorf("globex sees acme's: %+v %+v", facts, found)
	}
	callErr(t, globex, mcp.ToolForget, map[string]any{"user_id": "alice", "fact_id": rem.Fact.ID, "reason": "probe"}, "not found")
	call(t, acme, mcp.ToolForget, map[string]any{"user_id": "alice", "fact_id": rem.Fact.ID, "reason": "asked"}, nil)
}
