package inspector_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/inspector"
)

// FuzzHandler sends requests with arbitrary paths and queries to an
// inspector over the fixture sessions: every answer is a page with the
// security headers and a status below 500, and no answer shows another
// tenant's data.
func FuzzHandler(f *testing.F) {
	for _, s := range []struct{ path, query string }{
		{"/", "user=alice&size=1"},
		{"/sessions/fix-login", "format=anthropic&after=3"},
		{"/sessions/fix-login/context", "at=13&budget=250&truncate=1"},
		{"/sessions/fix-login/context", "at=99999999999999999999"},
		{"/sessions/acme-secret/context", "at=1"},
		{"/sessions/../etc/passwd", ""},
		{"/facts", "user=alice"},
		{"/facts/history", "user=alice&id=f-go"},
		{"/recall", "q=bcrypt&k=3"},
		{"/blocks", "user=alice&label=human"},
		{"/blocks", "session=fix-login"},
		{"/static/style.css", ""},
		{"/static/../inspector.go", ""},
	} {
		f.Add(s.path, s.query)
	}
	fx := newFixture(f, inspector.Config{Facts: newFacts(), Blocks: newBlocks(f, tickClock(t0))})
	f.Fuzz(func(t *testing.T, path, query string) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.URL = &url.URL{Path: path, RawQuery: query}
		r.RequestURI = r.URL.RequestURI()
		rec := httptest.NewRecorder()
		fx.in.ServeHTTP(rec, r)
		if rec.Code >= 500 {
			t.Fatalf("GET %s?%s: %d\n%s", path, query, rec.Code, rec.Body)
		}
		if rec.Header().Get("Content-Security-Policy") != inspector.ContentSecurityPolicy {
			t.Fatalf("GET %s?%s: no Content-Security-Policy", path, query)
		}
		if strings.Contains(rec.Body.String(), "ACME-CONFIDENTIAL") {
			t.Fatalf("GET %s?%s shows tenant acme's data", path, query)
		}
	})
}
