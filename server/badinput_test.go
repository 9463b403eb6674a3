package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/recall"
)

// TestBadInputCorpus sends every route a corpus of bad requests
// (malformed JSON, wrong types, huge bodies, invalid UTF-8, path traversal
// and other bad IDs) and checks that each is answered with a 4xx JSON
// error and that nothing changed: sessions, logs, facts or recall.
func TestBadInputCorpus(t *testing.T) {
	now := fixedNow
	e := newEnv(t, withLongTerm(&now), withBlocks, func(c *Config) { c.MaxBodyBytes = 64 << 10 })
	e.create("s")
	e.appendSteps("s", "["+sysStep+","+taskStep+","+actionStep(1, "out")+"]")
	var rem api.RememberResponse
	e.must(201, "POST", "/v1/users/u1/facts", `{"text":"Uses Go"}`).json(t, &rem)
	e.must(200, "POST", "/v1/recall", `{"documents":[{"id":"d1","text":"a note"}]}`)
	e.must(201, "PUT", "/v1/users/u1/blocks/persona", `{"value":"Uses Go"}`)
	e.must(201, "PUT", "/v1/sessions/s/blocks/persona", `{"value":"the plan"}`)

	state := func() string {
		t.Helper()
		ctx := context.Background()
		if err := e.srv.index.Sync(ctx); err != nil { // the index has every write so far
			t.Fatal(err)
		}
		var b strings.Builder
		b.WriteString(e.dump())
		fs, err := e.srv.cfg.Facts.List(ctx, "", "u1", true)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			b.WriteString(f.ID + f.Text + f.ReinforcedAt.String() + "\n")
		}
		hits, err := e.srv.cfg.Recall.Search(ctx, recall.Query{Text: "note out task system fix parser", K: 50})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			b.WriteString(h.Doc.ID + h.Doc.Text + "\n")
		}
		for _, path := range []string{"/v1/users/u1/blocks", "/v1/sessions/s/blocks"} {
			b.Write(e.must(200, "GET", path, nil).body)
			b.Write(e.must(200, "GET", path+"/persona/history", nil).body)
		}
		return b.String()
	}
	before := state()

	bodies := map[string]any{
		"malformed":        `{"a":`,
		"not json":         `hello`,
		"a number":         `42`,
		"null":             `null`,
		"an array of junk": `[1,2,3]`,
		"wrong types":      `{"id":7,"text":false,"documents":"x","strategy":[],"at_seq":"3","user_id":{}}`,
		"malformed time":   `{"documents":[{"text":"a","time":"now"}],"time":"2026-11-27","type":"task","task":"t"}`,
		"out of range":     `{"documents":[{"text":"a","seq":1e30}],"at_seq":1e30,"ttl_seconds":-1.5,"n":1e300}`,
		"unknown field":    `{"colour":"red"}`,
		"invalid UTF-8":    []byte("{\"text\":\"\xff\xfe\",\"task\":\"\xc3\"}"),
		"lone surrogate":   `{"text":"\ud800","type":"task","task":"\udfff"}`,
		"trailing data":    `{} {}`,
		"huge":             `{"text":"` + strings.Repeat("a", 70<<10) + `"}`,
		"deeply nested":    strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	}
	// Session and document IDs are names from a small alphabet; user IDs
	// are free text (an e-mail address, a name): not blank, bounded, no
	// NUL.
	badIDs := map[string][]string{
		"{id}":    {"..%2F..%2Fetc%2Fpasswd", "%2E%2E", "a%00b", strings.Repeat("x", 300), "-lead", "sp%20ace"},
		"{doc}":   {"a%00b", strings.Repeat("x", 300)},
		"{user}":  {"a%00b", "%20", strings.Repeat("x", 300)},
		"{label}": {"a%00b", "9lives", "a%20b", strings.Repeat("x", 300)},
	}

	for _, rt := range e.srv.routeTable() {
		if rt.open {
			continue
		}
		method, path, _ := strings.Cut(rt.pattern, " ")
		concrete := strings.NewReplacer("{id}", "s", "{user}", "u1", "{fact}", rem.Fact.ID, "{doc}", "d1", "{label}", "persona").Replace(path)
		check := func(what, target string, body any, headers ...string) {
			t.Helper()
			r := e.do(method, target, body, headers...)
			if r.code < 400 || r.code > 499 {
				t.Errorf("%s %.90s (%s): status %d: %.200s", method, target, what, r.code, r.body)
				return
			}
			if r.code != http.StatusMethodNotAllowed {
				r.apiErr(t)
			}
		}
		if method == "POST" {
			for name, body := range bodies {
				if name == "null" && (rt.pattern == "POST /v1/sessions" || rt.pattern == "POST /v1/sessions/{id}/fork" || rt.pattern == "POST /v1/sessions/{id}/pop" || rt.pattern == "POST /v1/sessions/{id}/items/pop") {
					continue // their body is optional: null is no body, which is good input
				}
				check(name, concrete, body)
			}
			check("text/plain", concrete, `{}`, "Content-Type", "text/plain")
		}
		for param, ids := range badIDs {
			if !strings.Contains(path, param) {
				continue
			}
			for _, id := range ids {
				target := strings.NewReplacer(param, id, "{id}", "s", "{user}", "u1", "{fact}", rem.Fact.ID, "{doc}", "d1", "{label}", "persona").Replace(path)
				var body any
				if method == "POST" {
					body = `{}`
				}
				check("bad ID "+id, target, body)
			}
		}
		// Query parameters of the wrong type, unknown, or not UTF-8.
		check("unknown parameter", concrete+"?bogus=1", nil)
		check("parameter not UTF-8", concrete+"?%ff=1", nil)
		for _, p := range rt.params {
			check("value not UTF-8", concrete+"?"+p+"=%ff", nil)
		}
	}
	if after := state(); after != before {
		t.Errorf("bad input changed the state:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestRepeatedKeys: a key repeated in an object (which encoding/json would
// resolve silently, the last one winning) is refused on every route that
// takes a body, with 400 naming the repeated key's path, and changes
// nothing.
func TestRepeatedKeys(t *testing.T) {
	now := fixedNow
	e := newEnv(t, withLongTerm(&now))
	e.create("s")
	e.appendSteps("s", "["+sysStep+","+taskStep+"]")
	before := e.dump()
	for _, c := range []struct{ path, body, field string }{
		{"/v1/sessions", `{"id":"n1","user_id":"u","user_id":"v"}`, "user_id"},
		{"/v1/sessions", `{"id":"n1","user_id":"u","\u0075ser_id":"v"}`, "user_id"},
		{"/v1/sessions/s/fork", `{"id":"b1","metadata":{"k":"1","k":"2"}}`, "metadata.k"},
		{"/v1/sessions/s/steps", `{"type":"task","task":"a","task":"b"}`, "task"},
		{"/v1/sessions/s/steps", `[` + taskStep + `,{"type":"task","task":"a","metadata":{"x":"1","x":"2"}}]`, "steps[1].metadata.x"},
		{"/v1/sessions/s/steps", `{"steps":[` + taskStep + `],"steps":[]}`, "steps"},
		{"/v1/sessions/s/steps", `{"steps":[` + taskStep + `],"compaction":{"working":[-1],"working":[1]}}`, "compaction.working"},
		{"/v1/sessions/s/messages", `{"role":"user","content":"a","role":"system"}`, "role"},
		{"/v1/sessions/s/messages", `[{"role":"user","content":"hi"},{"role":"user","content":"hi","content":"there"}]`, "messages[1].content"},
		{"/v1/sessions/s/compact", `{"strategy":"keep_last_n","n":1,"n":2}`, "n"},
		{"/v1/recall", `{"documents":[{"id":"d2","text":"x","metadata":{"a b":"1","a b":"2"}}]}`, `documents[0].metadata["a b"]`},
		{"/v1/users/u1/facts", `{"text":"Likes tea","text":"Likes coffee"}`, "text"},
	} {
		r := e.do("POST", c.path, c.body)
		if r.code != http.StatusBadRequest {
			t.Errorf("POST %s %s: status %d: %s", c.path, c.body, r.code, r.body)
			continue
		}
		if err := r.apiErr(t); err.Field != c.field || err.Code != api.CodeInvalid || !strings.Contains(err.Message, "repeated key") {
			t.Errorf("POST %s %s: %+v, want field %q", c.path, c.body, err, c.field)
		}
	}
	if e.dump() != before {
		t.Error("a refused request changed the store")
	}
	if fs, _ := e.srv.cfg.Facts.List(context.Background(), "", "u1", true); len(fs) != 0 {
		t.Errorf("a refused request remembered %+v", fs)
	}
	if doc, err := e.srv.cfg.Recall.Get(context.Background(), "", "d2"); err == nil {
		t.Errorf("a refused request indexed %+v", doc)
	}
}

// TestMemberNamesAreCaseSensitive: a member whose name matches a field
// only in another letter case (which encoding/json would take, and of
// "task" and "Task" keep the last) is refused on every route that takes a
// body, naming it, and changes nothing.
func TestMemberNamesAreCaseSensitive(t *testing.T) {
	now := fixedNow
	e := newEnv(t, withLongTerm(&now))
	e.create("s")
	e.appendSteps("s", "["+sysStep+","+taskStep+"]")
	before := e.dump()
	for _, c := range []struct{ path, body, field string }{
		{"/v1/sessions", `{"id":"n1","User_ID":"v"}`, "User_ID"},
		{"/v1/sessions/s/fork", `{"ID":"b1"}`, "ID"},
		{"/v1/sessions/s/steps", `{"type":"task","task":"a","Task":"b"}`, "Task"},
		{"/v1/sessions/s/steps", `[` + taskStep + `,{"type":"action","tool_calls":[{"id":"c","function":{"Name":"f"}}],"results":[{"call_id":"c","content":"r"}]}]`, "steps[1].function.Name"},
		{"/v1/sessions/s/steps", `{"type":"message","message":{"role":"user","Content":"hi"}}`, "message.Content"},
		{"/v1/sessions/s/steps", `{"steps":[` + taskStep + `],"compaction":{"Working":[-1]}}`, "compaction.Working"},
		{"/v1/sessions/s/messages", `{"role":"user","Content":"hi"}`, "Content"},
		{"/v1/sessions/s/compact", `{"Strategy":"keep_last_n","n":1}`, "Strategy"},
		{"/v1/recall", `{"documents":[{"id":"d2","Text":"x"}]}`, "documents[0].Text"},
		{"/v1/users/u1/facts", `{"text":"Likes tea","Confidence":0.5}`, "Confidence"},
	} {
		r := e.do("POST", c.path, c.body)
		if r.code != http.StatusBadRequest {
			t.Errorf("POST %s %s: status %d: %s", c.path, c.body, r.code, r.body)
			continue
		}
		if err := r.apiErr(t); err.Field != c.field || err.Code != api.CodeInvalid {
			t.Errorf("POST %s %s: %+v, want field %q", c.path, c.body, err, c.field)
		}
	}
	if e.dump() != before {
		t.Error("a refused request changed the store")
	}
}

// TestBadValueForms: a value of the right JSON kind in the wrong form (a
// time that is not RFC 3339, a number out of its field's range) or of the
// wrong kind for a field with a form of its own (a time given as an
// object) is a 400 naming the field and the form it must have, on every
// route, never a 500; and nothing is stored.
func TestBadValueForms(t *testing.T) {
	now := fixedNow
	e := newEnv(t, withLongTerm(&now))
	e.create("s")
	e.appendSteps("s", "["+sysStep+","+taskStep+"]")
	before := e.dump()
	const rfc3339 = "RFC 3339"
	for _, c := range []struct{ path, body, field, want string }{
		{"/v1/recall", `{"documents":[{"text":"a","time":"now"}]}`, "documents[0].time", rfc3339},
		{"/v1/recall", `{"documents":[{"text":"a","time":"2026-11-27"}]}`, "documents[0].time", rfc3339},
		{"/v1/recall", `{"documents":[{"text":"a","time":"2026-11-27T25:00:00Z"}]}`, "documents[0].time", rfc3339},
		{"/v1/recall", `{"documents":[{"text":"a","time":{}}]}`, "documents[0].time", rfc3339},
		{"/v1/recall", `{"documents":[{"text":"a","time":1764000000}]}`, "documents[0].time", rfc3339},
		{"/v1/recall", `{"documents":[{"text":"a","seq":1.5}]}`, "documents[0].seq", "not 1.5"},
		{"/v1/recall", `{"documents":[{"text":"a","seq":1e30}]}`, "documents[0].seq", "9223372036854775807"},
		{"/v1/recall", `{"documents":[{"text":"a","embedding":[1e300]}]}`, "documents[0].embedding[0]", "3.4e+38"},
		{"/v1/recall", `{"documents":[{"text":"a","metadata":[]}]}`, "documents[0].metadata", "an object of strings"},
		{"/v1/sessions/s/steps", `{"type":"task","task":"a","time":"yesterday"}`, "time", rfc3339},
		{"/v1/sessions/s/steps", `[{"type":"task","task":"a","time":{}}]`, "steps[0].time", rfc3339},
		{"/v1/sessions/s/steps", `{"type":"action","tool_calls":[{"id":"c","function":{"name":"f"}}],"results":[{"call_id":"c","content":"r"}],"duration_ns":"1s"}`, "duration_ns", "nanoseconds"},
		{"/v1/sessions", `{"ttl_seconds":1.5}`, "ttl_seconds", "an integer"},
		{"/v1/sessions", `{"ttl_seconds":"60"}`, "ttl_seconds", "an integer"},
		{"/v1/sessions/s/fork", `{"at_seq":-1.5}`, "at_seq", "not -1.5"},
		{"/v1/users/u1/facts", `{"text":"Likes tea","confidence":"high"}`, "confidence", "a number"},
	} {
		r := e.do("POST", c.path, c.body)
		if r.code != http.StatusBadRequest {
			t.Errorf("POST %s %s: status %d: %s", c.path, c.body, r.code, r.body)
			continue
		}
		err := r.apiErr(t)
		if err.Field != c.field || err.Code != api.CodeInvalid || !strings.Contains(err.Message, c.want) || strings.Contains(err.Message, "an object, not a JSON object") {
			t.Errorf("POST %s %s: %+v, want field %q and a message with %q", c.path, c.body, err, c.field, c.want)
		}
	}
	if e.dump() != before {
		t.Error("a refused request changed the store")
	}
}
