package inspector_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/inspector"
)

// TestAnySessionIDs: a session ID may be any text without control
// characters (an e-mail address, an agent's name, markup): the pages link
// to a session with its ID percent-encoded as a path segment, show it
// escaped, and serve it at that link.
func TestAnySessionIDs(t *testing.T) {
	f := newFixture(t, inspector.Config{})
	ids := []string{"user@example.com", "Research Agent", "a/b ü?x=1#frag%", `"><script>alert(1)</script>`, "../x"}
	for _, id := range ids {
		seedLogin(t, f.st, "", id, tickClock(t0))
	}
	list := mustGet(t, f.in, "/?size=100", http.StatusOK)
	for _, id := range ids {
		link := `href="/sessions/` + html.EscapeString(url.PathEscape(id)) + `">` + html.EscapeString(id) + `</a>`
		if !strings.Contains(list, link) {
			t.Errorf("the sessions page has no link %s", link)
		}
		page := mustGet(t, f.in, "/sessions/"+url.PathEscape(id), http.StatusOK)
		if !strings.Contains(page, `<a id="session-id" href="/sessions/`+html.EscapeString(url.PathEscape(id))+`">`+html.EscapeString(id)+`</a>`) {
			t.Errorf("the page of %q does not name it", id)
		}
		if !strings.Contains(page, `href="/sessions/`+html.EscapeString(url.PathEscape(id))+`/context?`) {
			t.Errorf("the page of %q links no context", id)
		}
		mustGet(t, f.in, "/sessions/"+url.PathEscape(id)+"/context?at=3", http.StatusOK)
	}
	if strings.Contains(list, "<script>") {
		t.Error("the sessions page carries an ID's markup unescaped")
	}
}
