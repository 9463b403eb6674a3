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
	if s, err := st.Get(context.Background(), "web"); err != nil || s.Tenant != "acme" {
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
	if s, err := st.Get(context.Background(), "x"); err != nil || s.Tenant != "solo" {
		t.Errorf("session %+v, %v", s, err)
	}
}
