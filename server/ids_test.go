package server

import (
	"net/url"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/store"
)

// TestAnySessionIDs: a session ID may be any text without control
// characters (a conversation keyed by an e-mail address, an agent's
// name): a path carries it percent-encoded, as clients encode a path
// segment, the routes take it decoded, and Location gives it encoded.
func TestAnySessionIDs(t *testing.T) {
	e := newEnv(t)
	ids := []string{"user@example.com", "Research Agent", "a/b", "../x", "50%", "q?x=1#frag", "ünï 日本語", `"quoted" <b>`, "...", strings.Repeat("é", store.MaxIDLen/2)}
	for i, id := range ids {
		// Go's escaping of a path segment, and encodeURIComponent's (which
		// also escapes @ and :): the server takes both.
		segs := []string{url.PathEscape(id), strings.ReplaceAll(url.QueryEscape(id), "+", "%20")}
		r := e.must(201, "POST", "/v1/sessions", map[string]any{"id": id, "user_id": id, "agent": id})
		if loc := r.header.Get("Location"); loc != "/v1/sessions/"+segs[0] {
			t.Errorf("%q: Location %q", id, loc)
		}
		for _, seg := range segs {
			var s store.Session
			e.must(200, "GET", "/v1/sessions/"+seg, nil).json(t, &s)
			if s.ID != id || s.UserID != id {
				t.Fatalf("GET /v1/sessions/%s = %+v", seg, s)
			}
		}
		p := "/v1/sessions/" + segs[i%2]
		e.must(201, "POST", p+"/messages", `[{"role":"user","content":"hello"},{"role":"assistant","content":"hi"}]`)
		var c api.ContextResponse
		e.must(200, "GET", p+"/context", nil).json(t, &c)
		if c.LastSeq != 2 || len(c.Steps) != 2 {
			t.Fatalf("the context of %q: %+v", id, c)
		}
		var read readSteps
		e.must(200, "GET", p+"/steps", nil).json(t, &read)
		if len(read.Steps) != 2 {
			t.Fatalf("the steps of %q: %+v", id, read)
		}
		var branch store.Session
		bid := "branch of " + id[:min(len(id), 40)] + "!"
		r = e.must(201, "POST", p+"/fork", map[string]any{"id": bid})
		r.json(t, &branch)
		if branch.ID != bid || branch.ParentID != id || r.header.Get("Location") != "/v1/sessions/"+url.PathEscape(bid) {
			t.Fatalf("the fork of %q: %+v, Location %q", id, branch, r.header.Get("Location"))
		}
		e.must(200, "POST", p+"/pop", nil)
		e.must(201, "POST", p+"/items", `{"items":[{"role":"user","content":"again"}]}`)
		e.must(200, "GET", p+"/items", nil)
		e.must(200, "POST", p+"/compact", `{"strategy":"keep_last_n","n":1}`)
		e.must(204, "DELETE", "/v1/sessions/"+url.PathEscape(bid), nil)
		var list api.ListSessionsResponse
		e.must(200, "GET", "/v1/sessions?user_id="+url.QueryEscape(id), nil).json(t, &list)
		if len(list.Sessions) != 1 || list.Sessions[0].ID != id {
			t.Fatalf("the sessions of user %q: %+v", id, list)
		}
		e.must(204, "DELETE", p, nil)
		e.must(404, "GET", p, nil)
	}
	// What no session ID is: refused, naming it.
	for _, seg := range []string{"%2E%2E", "a%0Ab", "%C3", strings.Repeat("%C3%A9", store.MaxIDLen/2) + "x"} {
		if err := e.must(400, "GET", "/v1/sessions/"+seg, nil).apiErr(t); err.Code != api.CodeInvalid || err.Field != "id" {
			t.Errorf("GET /v1/sessions/%s: %+v", seg, err)
		}
	}
	if err := e.must(400, "POST", "/v1/sessions", `{"id":"a\tb"}`).apiErr(t); err.Field != "id" {
		t.Errorf("a tab in an ID: %+v", err)
	}
}
