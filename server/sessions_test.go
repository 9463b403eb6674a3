package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/store"
)

func TestCreateGetDeleteSession(t *testing.T) {
	e := newEnv(t)
	// An empty body creates a session with a new ID.
	r := e.must(201, "POST", "/v1/sessions", nil)
	var anon store.Session
	r.json(t, &anon)
	if anon.ID == "" || anon.Retention != store.SessionRetention || anon.LastSeq != 0 {
		t.Errorf("anonymous session: %+v", anon)
	}
	if r.header.Get("Location") != "/v1/sessions/"+anon.ID || r.header.Get("ETag") != `"0"` {
		t.Errorf("headers: %v", r.header)
	}

	body := `{"id":"s-1","user_id":"alice","agent":"coder","metadata":{"k":"v"},"retention":"single_run","ttl_seconds":3600}`
	var s store.Session
	e.must(201, "POST", "/v1/sessions", body).json(t, &s)
	if s.ID != "s-1" || s.UserID != "alice" || s.Agent != "coder" || s.Metadata["k"] != "v" || s.Retention != store.SingleRun ||
		!s.ExpiresAt.Equal(fixedNow.Add(time.Hour)) {
		t.Errorf("created: %+v", s)
	}
	// The same ID again is a conflict.
	if err := e.must(409, "POST", "/v1/sessions", `{"id":"s-1"}`).apiErr(t); err.Code != api.CodeConflict {
		t.Errorf("duplicate: %+v", err)
	}

	var got store.Session
	e.must(200, "GET", "/v1/sessions/s-1", nil).json(t, &got)
	if got.ID != "s-1" || got.UserID != "alice" {
		t.Errorf("get: %+v", got)
	}
	e.must(204, "DELETE", "/v1/sessions/s-1", nil)
	if err := e.must(404, "GET", "/v1/sessions/s-1", nil).apiErr(t); err.Code != api.CodeNotFound {
		t.Errorf("after delete: %+v", err)
	}
	e.must(404, "DELETE", "/v1/sessions/s-1", nil)
}

func TestListSessionsFiltersAndPages(t *testing.T) {
	e := newEnv(t)
	for i := range 7 {
		user := "alice"
		if i%2 == 1 {
			user = "bob"
		}
		e.must(201, "POST", "/v1/sessions", fmt.Sprintf(`{"id":"s%d","user_id":%q,"agent":"a%d"}`, i, user, i%3))
	}
	var all []string
	token := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("too many pages")
		}
		var page api.ListSessionsResponse
		e.must(200, "GET", "/v1/sessions?user_id=alice&page_size=2&page_token="+token, nil).json(t, &page)
		for _, s := range page.Sessions {
			if s.UserID != "alice" {
				t.Errorf("filter: %+v", s)
			}
			all = append(all, s.ID)
		}
		if page.NextPageToken == "" {
			break
		}
		token = page.NextPageToken
	}
	if len(all) != 4 {
		t.Errorf("alice's sessions: %v", all)
	}
	var page api.ListSessionsResponse
	e.must(200, "GET", "/v1/sessions?user_id=bob&agent=a1", nil).json(t, &page)
	if len(page.Sessions) != 1 || page.Sessions[0].ID != "s1" {
		t.Errorf("bob & a1: %+v", page.Sessions)
	}
	// No match is an empty list, not null.
	r := e.must(200, "GET", "/v1/sessions?user_id=nobody", nil)
	if !strings.Contains(string(r.body), `"sessions":[]`) {
		t.Errorf("empty list: %s", r.body)
	}
}

func TestForkSession(t *testing.T) {
	e := newEnv(t)
	e.create("p")
	e.appendSteps("p", "["+sysStep+","+taskStep+","+actionStep(1, "one")+","+actionStep(2, "two")+"]")

	var branch store.Session
	r := e.must(201, "POST", "/v1/sessions/p/fork", `{"at_seq":3,"id":"b"}`)
	r.json(t, &branch)
	if branch.ID != "b" || branch.ParentID != "p" || branch.ForkSeq != 3 || branch.LastSeq != 3 || branch.UserID != "u1" || branch.Agent != "coder" {
		t.Errorf("branch: %+v", branch)
	}
	// The branch sees the parent's history up to the fork point; writes
	// to it do not show in the parent.
	e.appendSteps("b", actionStep(9, "branch only"))
	var rs readSteps
	e.must(200, "GET", "/v1/sessions/b/steps", nil).json(t, &rs)
	if len(rs.Steps) != 4 || rs.LastSeq != 4 || !strings.Contains(fmt.Sprint(rs.Steps[3]), "branch only") {
		t.Errorf("branch log: %d steps, last %d", len(rs.Steps), rs.LastSeq)
	}
	var ctx api.ContextResponse
	e.must(200, "GET", "/v1/sessions/p/context", nil).json(t, &ctx)
	if fmt.Sprint(ctx.Steps) != "[1 2 3 4]" {
		t.Errorf("parent context steps %v", ctx.Steps)
	}
	e.must(200, "GET", "/v1/sessions/b/context", nil).json(t, &ctx)
	if fmt.Sprint(ctx.Steps) != "[1 2 3 4]" || !strings.Contains(fmt.Sprint(ctx.Messages), "branch only") {
		t.Errorf("branch context %v", ctx.Steps)
	}

	// No body forks at the end.
	var tip store.Session
	e.must(201, "POST", "/v1/sessions/p/fork", nil, "Content-Type", "").json(t, &tip)
	if tip.ForkSeq != 4 || tip.ParentID != "p" {
		t.Errorf("fork at the end: %+v", tip)
	}
	before := e.dump()
	for _, c := range []struct {
		body string
		code int
	}{
		{`{"at_seq":99}`, 400},
		{`{"at_seq":-1}`, 400},
		{`{"at_seq":"1"}`, 400},
		{`{"id":"b"}`, 409},
		{`{"id":".."}`, 400},
		{`{"bogus":1}`, 400},
	} {
		if r := e.do("POST", "/v1/sessions/p/fork", c.body); r.code != c.code {
			t.Errorf("fork %s: %d, want %d: %s", c.body, r.code, c.code, r.body)
		}
	}
	e.must(404, "POST", "/v1/sessions/nope/fork", `{}`)
	if e.dump() != before {
		t.Error("a refused fork changed the store")
	}

	// parent_id lists a session's branches, not their own.
	e.must(201, "POST", "/v1/sessions/b/fork", `{"id":"bb"}`)
	var page api.ListSessionsResponse
	e.must(200, "GET", "/v1/sessions?parent_id=p", nil).json(t, &page)
	var ids []string
	for _, s := range page.Sessions {
		ids = append(ids, s.ID)
	}
	want := []string{tip.ID, "b"}
	slices.Sort(ids)
	if slices.Sort(want); !slices.Equal(ids, want) {
		t.Errorf("branches of p: %v, want %s and b", ids, tip.ID)
	}
	e.must(200, "GET", "/v1/sessions?parent_id=b", nil).json(t, &page)
	if len(page.Sessions) != 1 || page.Sessions[0].ID != "bb" {
		t.Errorf("branches of b: %+v", page.Sessions)
	}
	if err := e.must(400, "GET", "/v1/sessions?parent_id=..", nil).apiErr(t); err.Field != "parent_id" {
		t.Errorf("a bad parent_id: %+v", err)
	}
}

func TestSessionCreateBadInput(t *testing.T) {
	e := newEnv(t)
	e.create("taken")
	before := e.dump()
	long := strings.Repeat("x", 300)
	for _, c := range []struct {
		name, body, field string
		code              int
	}{
		{"malformed", `{"id":`, "", 400},
		{"not an object", `[1]`, "", 400},
		{"wrong type", `{"user_id":7}`, "user_id", 400},
		{"unknown field", `{"user":"x"}`, "user", 400},
		{"bad id", `{"id":".."}`, "id", 400},
		{"id with a control character", `{"id":"a\nb"}`, "id", 400},
		{"long user", `{"user_id":"` + long + `"}`, "user_id", 400},
		{"bad retention", `{"retention":"forever"}`, "retention", 400},
		{"negative ttl", `{"ttl_seconds":-1}`, "ttl_seconds", 400},
		{"ttl on persistent", `{"retention":"persistent","ttl_seconds":5}`, "ttl_seconds", 400},
		{"trailing data", `{"id":"x"} {"id":"y"}`, "", 400},
		{"taken", `{"id":"taken"}`, "", 409},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("POST", "/v1/sessions", c.body)
			if r.code != c.code {
				t.Fatalf("status %d, want %d: %s", r.code, c.code, r.body)
			}
			if err := r.apiErr(t); c.field != "" && err.Field != c.field {
				t.Errorf("field %q, want %q (%s)", err.Field, c.field, err.Message)
			}
		})
	}
	if e.dump() != before {
		t.Error("a refused create changed the store")
	}
}

func TestListBadInput(t *testing.T) {
	e := newEnv(t)
	for _, q := range []string{"page_size=-1", "page_size=x", "page_size=1001", "page_token=garbage!", "usr=1", "user_id=a&user_id=b"} {
		if r := e.do("GET", "/v1/sessions?"+q, nil); r.code != 400 {
			t.Errorf("%s: %d %s", q, r.code, r.body)
		} else {
			r.apiErr(t)
		}
	}
}

func TestSessionIDsInPaths(t *testing.T) {
	e := newEnv(t)
	e.create("ok")
	before := e.dump()
	for _, p := range []string{
		"/v1/sessions/..%2Fetc", "/v1/sessions/..%2F..%2Fetc%2Fpasswd", "/v1/sessions/%2E%2E", "/v1/sessions/a%00b",
		"/v1/sessions/" + strings.Repeat("a", 129), "/v1/sessions/-x", "/v1/sessions/a%20b", "/v1/sessions/%C3%A9",
	} {
		for _, m := range []struct{ method, suffix, body string }{
			{"GET", "", ""}, {"DELETE", "", ""}, {"GET", "/steps", ""}, {"GET", "/context", ""},
			{"POST", "/steps", taskStep}, {"POST", "/messages", `{"role":"user","content":"hi"}`},
			{"POST", "/fork", `{}`}, {"POST", "/compact", `{"strategy":"keep_last_n","n":1}`},
		} {
			var body any
			if m.body != "" {
				body = m.body
			}
			r := e.do(m.method, p+m.suffix, body)
			if r.code != 400 && r.code != 404 {
				t.Errorf("%s %s: %d %s", m.method, p+m.suffix, r.code, r.body)
				continue
			}
			r.apiErr(t)
		}
	}
	// A dot-dot path that is not encoded is cleaned by the mux (a
	// redirect), never served.
	if r := e.do("GET", "/v1/sessions/../etc", nil); r.code == 200 {
		t.Errorf("../etc: %d", r.code)
	}
	if e.dump() != before {
		t.Error("a bad ID changed the store")
	}
}

func TestDeleteEvictsCache(t *testing.T) {
	e := newEnv(t)
	e.create("s")
	e.appendSteps("s", "["+sysStep+","+taskStep+"]")
	e.must(200, "GET", "/v1/sessions/s/context", nil)
	if e.srv.svc.CacheStats().Sessions != 1 {
		t.Fatalf("cache has %d", e.srv.svc.CacheStats().Sessions)
	}
	e.must(204, "DELETE", "/v1/sessions/s", nil)
	if e.srv.svc.CacheStats().Sessions != 0 {
		t.Errorf("cache has %d after delete", e.srv.svc.CacheStats().Sessions)
	}
	e.must(404, "GET", "/v1/sessions/s/context", nil)
	// Deleted behind the server's back (another instance): the context
	// route notices and forgets the session.
	e.create("t")
	e.appendSteps("t", taskStep)
	e.must(200, "GET", "/v1/sessions/t/context", nil)
	if err := e.mem.Delete(context.Background(), "", "t"); err != nil {
		t.Fatal(err)
	}
	e.must(http.StatusNotFound, "GET", "/v1/sessions/t/context", nil)
	if e.srv.svc.CacheStats().Sessions != 0 {
		t.Errorf("cache has %d", e.srv.svc.CacheStats().Sessions)
	}
}
