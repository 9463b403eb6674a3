package server

import (
	"errors"
	"net/http"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/auth"
	chatproxy "github.com/agentmem/agentmem/proxy"
)

// The proxy routes, POST /v1/chat/completions and POST /v1/messages
// (package proxy): OpenAI- and Anthropic-compatible endpoints that record
// the conversation in the session X-Agentmem-Session names and send the
// provider its context fitted to a budget. They are routes of the API
// like any other (API keys, tenants, metrics), but for one difference in
// authentication. A bearer token that is not an agentmem API key is the
// caller's credential for the upstream provider, not an attempt to
// authenticate to agentmem (see proxyGuard).

// proxyPatterns are the patterns of the proxy routes.
var proxyPatterns = map[string]bool{"POST /v1/chat/completions": true, "POST /v1/messages": true}

// chatCompletions serves POST /v1/chat/completions.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	s.proxied(w, r, (*chatproxy.Proxy).ChatCompletions)
}

// messagesProxy serves POST /v1/messages.
func (s *Server) messagesProxy(w http.ResponseWriter, r *http.Request) {
	s.proxied(w, r, (*chatproxy.Proxy).Messages)
}

func (s *Server) proxied(w http.ResponseWriter, r *http.Request, serve func(*chatproxy.Proxy, http.ResponseWriter, *http.Request) error) {
	if s.cfg.Proxy == nil {
		writeError(w, &Error{Status: http.StatusBadRequest, Code: api.CodeUpstreamNotConfigured,
			Message: "this server has no upstream provider: start it with --upstream-base-url (OpenAI-compatible) or --anthropic-base-url"})
		return
	}
	err := serve(s.cfg.Proxy, w, r)
	if err == nil {
		return
	}
	if pe, ok := upstreamFailure(err); ok {
		// The provider's failure, not the store's: counted by
		// ProxyCall (agentmem_proxy_upstream_errors_total) and logged
		// with its cause, which the answer does not give.
		s.log.Warn("proxy: the upstream failed", "code", pe.Code, "method", r.Method, "path", r.URL.Path, "err", pe.Err)
		writeError(w, apiError(err))
		return
	}
	s.fail(w, r, "proxy", err)
}

// upstreamFailure returns the error of a proxied call that failed because
// of the upstream provider: it could not be reached, or it redirected.
func upstreamFailure(err error) (*chatproxy.Error, bool) {
	var pe *chatproxy.Error
	if !errors.As(err, &pe) {
		return nil, false
	}
	switch pe.Code {
	case api.CodeUpstreamUnreachable, api.CodeUpstreamRedirect:
		return pe, true
	}
	return nil, false
}

// proxyError converts an error of the proxy.
func proxyError(err error) (*Error, bool) {
	var pe *chatproxy.Error
	if !errors.As(err, &pe) {
		return nil, false
	}
	return &Error{Status: pe.Status, Code: pe.Code, Field: pe.Field, Message: pe.Message, cause: err}, true
}

// proxyGuard runs the security layer for a proxy route. An Authorization
// bearer token that is not an agentmem API key (an OpenAI key, say) is
// the caller's credential for the upstream, kept for the proxy to
// forward. The request is then authenticated as if it had no key, so it
// passes only where agentmem needs none: on loopback before any key
// exists, or with Config.Auth nil.
func (s *Server) proxyGuard(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	header := r.Header.Get("Authorization")
	token, given, err := auth.ParseAuthorization(header)
	if !given || err != nil {
		return s.guard(w, r, false, false)
	}
	if _, err := auth.ParseToken(token); err == nil {
		return s.guard(w, r, false, false) // an agentmem key
	}
	bare := r.Clone(r.Context())
	bare.Header.Del("Authorization")
	guarded, ok := s.guard(w, bare, false, false)
	if !ok {
		return nil, false
	}
	guarded.Header.Set("Authorization", header)
	return guarded, true
}
