package mcp

import (
	"context"
	"encoding/json"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TenantFunc decides which tenant an HTTP request acts for (the server's
// API-key authentication, for example). An error refuses the request with
// 401 and the error's message.
type TenantFunc func(r *http.Request) (tenant string, err error)

// NewHTTPHandler returns the MCP streamable HTTP transport of s, to mount
// at /mcp. tenant is asked for every request, so a client's key decides
// what each of its calls reaches. A nil tenant serves Config.Tenant to
// every request.
//
// The handler is stateless (no Mcp-Session-Id): every request is served on
// its own by the tools of its tenant. So no session can outlive a key or
// be carried over to another one, and any number of server instances can
// serve one client. Responses are plain JSON (not event streams). Requests
// addressed to a loopback address with a foreign Host header are refused
// (DNS rebinding protection). Bodies are limited to 4 MiB.
func NewHTTPHandler(s *Server, tenant TenantFunc) http.Handler {
	if tenant == nil {
		t := s.cfg.Tenant
		tenant = func(*http.Request) (string, error) { return t, nil }
	}
	h := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		t, ok := r.Context().Value(tenantKey{}).(string)
		if !ok {
			return nil
		}
		sv, err := s.forTenant(t)
		if err != nil {
			return nil
		}
		return sv
	}, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: s.cfg.Logger})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, err := tenant(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentmem"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "unauthorized", "message": err.Error()}})
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tenantKey{}, t)))
	})
}

// tenantKey is the context key of the tenant NewHTTPHandler decided.
type tenantKey struct{}
