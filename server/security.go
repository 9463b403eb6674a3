package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/auth"
	chatproxy "github.com/agentmem/agentmem/proxy"
)

// The security layer runs before every route (ServeHTTP): CORS, the
// cross-origin write protection, then authentication, which puts the
// request's auth.Identity in its context. Handlers confine themselves to
// Tenant(r): another tenant's session is answered exactly as a missing
// one (404), so a key cannot even learn which IDs another tenant uses.

// Tenant returns the tenant a request is confined to: the tenant of the
// API key that authenticated it, or the default tenant "" (no keys, or
// Config.Auth nil). Every handler, including those other packages add to
// the server, reads and writes only that tenant's data.
func Tenant(r *http.Request) string { return auth.TenantFrom(r.Context()) }

// corsMaxAge is how long a browser may cache a preflight answer (seconds).
const corsMaxAge = "600"

// corsAllowedHeaders are the request headers a cross-origin page may send:
// the API's and the proxy routes' (X-Agentmem-Session...).
var corsAllowedHeaders = strings.Join(append([]string{"Authorization", "Content-Type", "Idempotency-Key", "If-Match"}, chatproxy.RequestHeaders...), ", ")

// corsExposedHeaders are the response headers a cross-origin page may
// read: the API's and the proxy's answers' (X-Agentmem-Context-Tokens...).
var corsExposedHeaders = strings.Join(append([]string{"ETag", "Location", "Retry-After", "WWW-Authenticate"}, chatproxy.ResponseHeaders...), ", ")

// corsMethods are the methods of the API.
var corsMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPatch, http.MethodDelete}

// security is the server's request guard, built from the Config.
type security struct {
	auth *auth.Authenticator
	// origins are the allowed CORS origins (exact match); empty: CORS off.
	origins map[string]bool
	// crossOrigin refuses browser writes from other origins than the
	// server's own and the allowed ones.
	crossOrigin *http.CrossOriginProtection
}

// newSecurity checks the CORS origins and builds the guard.
func newSecurity(cfg *Config) (*security, error) {
	sec := &security{auth: cfg.Auth, origins: map[string]bool{}, crossOrigin: http.NewCrossOriginProtection()}
	for _, o := range cfg.CORSOrigins {
		if err := checkOrigin(o); err != nil {
			return nil, err
		}
		if err := sec.crossOrigin.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("server: Config.CORSOrigins: %q: %w", o, err)
		}
		sec.origins[o] = true
	}
	return sec, nil
}

// checkOrigin checks a CORS origin: scheme://host[:port], exactly as a
// browser sends it, never a wildcard.
func checkOrigin(o string) error {
	bad := func(why string) error { return fmt.Errorf("server: Config.CORSOrigins: %q: %s", o, why) }
	if o == "*" || strings.Contains(o, "*") {
		return bad("a wildcard is not allowed: list each origin (scheme://host[:port])")
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o, "/") || u.String() != o {
		return bad("not an origin: want scheme://host[:port] with no path, such as https://app.example.com")
	}
	if strings.ToLower(o) != o {
		return bad("browsers send origins in lower case")
	}
	return nil
}

// guard runs the security layer for a request to a route (open routes need
// no key). It returns the request with its identity in the context, or
// false after writing the answer itself (a preflight, 401, 403).
func (s *Server) guard(w http.ResponseWriter, r *http.Request, open, browser bool) (*http.Request, bool) {
	sec := s.sec
	origin := r.Header.Get("Origin")
	if len(sec.origins) > 0 {
		h := w.Header()
		h.Add("Vary", "Origin")
		if sec.origins[origin] {
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", corsExposedHeaders)
		}
		if r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != "" {
			s.preflight(w, r, sec.origins[origin])
			return nil, false
		}
	}
	if err := sec.crossOrigin.Check(r); err != nil {
		closeUnread(w, r)
		s.log.Info("refused a cross-origin write", "method", r.Method, "path", r.URL.Path, "origin", origin)
		writeError(w, &Error{Status: http.StatusForbidden, Code: api.CodeForbidden, Field: "Origin",
			Message: "cross-origin writes are refused: this origin is not in the server's CORS origins"})
		return nil, false
	}
	if open || sec.auth == nil {
		return r, true
	}
	if browser {
		r = basicAsBearer(r)
	}
	id, err := sec.auth.Authenticate(r)
	if err != nil {
		closeUnread(w, r)
		var ue *auth.UnauthenticatedError
		if !errors.As(err, &ue) {
			s.fail(w, r, "auth", err)
			return nil, false
		}
		challenge := `Bearer realm="agentmem"`
		if ue.Reason != auth.ReasonMissing {
			challenge += `, error="invalid_token"`
			s.log.Info("refused an API key", "reason", ue.Reason, "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
		}
		w.Header().Add("WWW-Authenticate", challenge)
		if browser {
			// Browsers cannot send a bearer key, but they ask for a
			// password when challenged with Basic: the API key is the
			// password (the user name is ignored).
			w.Header().Add("WWW-Authenticate", `Basic realm="agentmem inspector", charset="UTF-8"`)
		}
		writeError(w, &Error{Status: http.StatusUnauthorized, Code: api.CodeUnauthorized, Field: "Authorization", Message: ue.Message, cause: err})
		return nil, false
	}
	return r.WithContext(auth.NewContext(r.Context(), id)), true
}

// closeUnread has the connection of a request refused before its body was
// read closed after the answer. Otherwise net/http reads and discards up
// to 256 KiB of the body first, to reuse the connection. A client that
// announces a body and never sends it would then hold the connection and
// a file descriptor until the server's read timeout. Enough of them would
// lock every client out.
func closeUnread(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
}

// preflight answers a CORS preflight request: 204 with the allowed
// methods and headers for an allowed origin and method, 403 otherwise.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request, allowed bool) {
	method := r.Header.Get("Access-Control-Request-Method")
	if !allowed {
		writeError(w, &Error{Status: http.StatusForbidden, Code: api.CodeForbidden, Field: "Origin",
			Message: "this origin is not allowed: the server's CORS origins do not list it"})
		return
	}
	if !slices.Contains(corsMethods, method) {
		writeError(w, &Error{Status: http.StatusForbidden, Code: api.CodeForbidden, Field: "Access-Control-Request-Method",
			Message: fmt.Sprintf("%q is not a method of the API", method)})
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", strings.Join(corsMethods, ", "))
	h.Set("Access-Control-Allow-Headers", corsAllowedHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	w.WriteHeader(http.StatusNoContent)
}

// errNoSession is the 404 of a session that does not exist or belongs to
// another tenant: the two answers are the same, byte for byte.
func errNoSession(id string) *Error { return errNotFound("session %q not found", id) }

// sessionErr maps a store error about session id: not found becomes
// errNoSession, so that every route answers a missing session alike.
func sessionErr(id string, err error) error {
	if errors.Is(err, agentmem.ErrNotFound) {
		return errNoSession(id)
	}
	return err
}

// basicAsBearer returns r with "Authorization: Basic" credentials turned
// into "Authorization: Bearer <password>": the web inspector's pages take
// the API key as the password a browser asks for.
func basicAsBearer(r *http.Request) *http.Request {
	_, key, ok := r.BasicAuth()
	if !ok {
		return r
	}
	r2 := r.Clone(r.Context())
	r2.Header.Set("Authorization", "Bearer "+key)
	return r2
}
