package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
	"github.com/agentmem/agentmem/views/recallview"
)

// withLongTerm gives the server a recall index (fed by a follower of the
// env's store, which newEnv runs) and a facts memory on the env's fixed
// clock.
func withLongTerm(now *time.Time) func(*Config) {
	return func(c *Config) {
		ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
		c.Recall = ix
		mem := faultyOf(c.Store).Driver.(*store.Store)
		c.RecallFollower = recallview.NewFollower(mem, mem, &recallview.Indexer{Index: ix, Store: mem}, recallview.FollowerOptions{})
		c.Facts = facts.New(facts.NewMemStore(), facts.Options{
			Clock: func() time.Time { return *now },
			Decay: facts.Decay{HalfLife: 24 * time.Hour, Floor: 0.1},
		})
		c.Extractor = echoExtractor
	}
}

// echoExtractor remembers the text of a turn's first message, as is.
var echoExtractor = facts.ExtractorFunc(func(_ context.Context, req facts.ExtractRequest) ([]facts.Decision, error) {
	if len(req.Messages) == 0 || req.Messages[0].Text() == "" {
		return nil, nil
	}
	return []facts.Decision{{Op: facts.OpAdd, Text: req.Messages[0].Text()}}, nil
})

func TestRecallRoutes(t *testing.T) {
	now := fixedNow
	e := newEnv(t, withLongTerm(&now))
	e.create("s1")
	e.appendSteps("s1", "["+sysStep+","+taskStep+`,{"type":"message","message":{"role":"user","content":"My dog Pixel hates thunderstorms"}},`+actionStep(1, "package parser")+"]")

	var res api.RecallSearchResponse
	e.must(200, "GET", "/v1/recall/search?q=dog+thunder&k=3&scope=user:u1&before=1&after=1&fresh=true", nil).json(t, &res)
	if len(res.Hits) == 0 {
		t.Fatal("an appended turn is not found")
	}
	h := res.Hits[0]
	if h.SessionID != "s1" || h.Step != 3 || h.ID != "s1#3" || !strings.Contains(h.Text, "Pixel") || h.Score <= 0 {
		t.Errorf("best hit: %+v", h)
	}
	if len(h.Window) != 3 || h.Window[0].Seq != 2 || h.Window[2].Seq != 4 {
		t.Errorf("window: %+v", h.Window)
	}
	e.must(200, "GET", "/v1/recall/search?q=dog&scope=session:other", nil).json(t, &res)
	if len(res.Hits) != 0 {
		t.Errorf("scope session:other finds %+v", res.Hits)
	}

	// Documents of the caller's own.
	var up api.UpsertRecallResponse
	e.must(200, "POST", "/v1/recall", `{"documents":[{"id":"note-1","text":"The staging database is on port 5433","metadata":{"kind":"note"}},{"text":"Deploys happen on Tuesdays"}]}`).json(t, &up)
	if len(up.IDs) != 2 || up.IDs[0] != "note-1" || up.IDs[1] == "" {
		t.Fatalf("upsert ids %v", up.IDs)
	}
	var doc api.RecallDocument
	e.must(200, "GET", "/v1/recall/note-1", nil).json(t, &doc)
	if doc.Text != "The staging database is on port 5433" || doc.Metadata["kind"] != "note" {
		t.Errorf("get: %+v", doc)
	}
	e.must(200, "GET", "/v1/recall/"+url.PathEscape("s1#3"), nil).json(t, &doc)
	if !strings.Contains(doc.Text, "Pixel") {
		t.Errorf("get a turn: %+v", doc)
	}
	e.must(204, "DELETE", "/v1/recall/note-1", nil)
	e.must(404, "GET", "/v1/recall/note-1", nil)
	e.must(404, "DELETE", "/v1/recall/note-1", nil)

	// Deleting the session forgets its turns.
	e.must(204, "DELETE", "/v1/sessions/s1", nil)
	e.must(200, "GET", "/v1/recall/search?q=dog&fresh=true", nil).json(t, &res)
	if len(res.Hits) != 0 {
		t.Errorf("a deleted session's turns are still found: %+v", res.Hits)
	}

	before := e.dump()
	var after api.RecallSearchResponse
	e.must(200, "GET", "/v1/recall/search?q=deploys", nil).json(t, &res)
	for _, tc := range []struct{ method, path, body, field string }{
		{"GET", "/v1/recall/search", "", "q"},
		{"GET", "/v1/recall/search?q=+", "", "q"},
		{"GET", "/v1/recall/search?q=a&k=0", "", "k"},
		{"GET", "/v1/recall/search?q=a&k=201", "", "k"},
		{"GET", "/v1/recall/search?q=a&before=-1", "", "before"},
		{"GET", "/v1/recall/search?q=a&scope=team:x", "", "scope"},
		{"GET", "/v1/recall/search?q=a&scope=user:", "", "scope"},
		{"GET", "/v1/recall/search?q=a&limit=3", "", "limit"},
		{"GET", "/v1/recall/search?q=" + strings.Repeat("a", api.MaxQueryBytes+1), "", "q"},
		{"POST", "/v1/recall", `{"documents":[]}`, "documents"},
		{"POST", "/v1/recall", `{"documents":[{"id":"x","text":"a"},{"id":"x","text":"b"}]}`, "documents[1].id"},
		{"POST", "/v1/recall", `{"documents":[{"id":"ok","text":"a"},{"id":"bad","text":"b","embedding":"no"}]}`, "documents[1].embedding"},
		{"POST", "/v1/recall", `{"documents":[{"text":"a","colour":"red"}]}`, "documents[0].colour"},
		{"POST", "/v1/recall", `{"documents":[{"id":"ok","text":"a"},{"id":"` + strings.Repeat("x", recall.MaxIDLen+1) + `","text":"b"}]}`, "documents[1].id"},
	} {
		r := e.do(tc.method, tc.path, nilIfEmpty(tc.body))
		if r.code != 400 {
			t.Errorf("%s %.80s: status %d: %s", tc.method, tc.path, r.code, r.body)
			continue
		}
		if got := r.apiErr(t); got.Code != api.CodeInvalid || got.Field != tc.field {
			t.Errorf("%s %.80s: error %+v, want field %q", tc.method, tc.path, got, tc.field)
		}
	}
	e.must(413, "POST", "/v1/recall", `{"documents":[{"text":"`+strings.Repeat("a", DefaultMaxBodyBytes)+`"}]}`)
	e.must(415, "POST", "/v1/recall", `{"documents":[{"text":"a"}]}`, "Content-Type", "text/plain")
	e.must(404, "GET", "/v1/recall/ok", nil) // nothing of a refused request was written
	e.must(200, "GET", "/v1/recall/search?q=deploys&fresh=true", nil).json(t, &after)
	if len(after.Hits) != len(res.Hits) || e.dump() != before {
		t.Error("a refused request changed the index or the store")
	}
}

// nilIfEmpty is body for do: nil when empty.
func nilIfEmpty(body string) any {
	if body == "" {
		return nil
	}
	return body
}

func TestFactsRoutes(t *testing.T) {
	now := fixedNow
	e := newEnv(t, withLongTerm(&now))
	var rem api.RememberResponse
	r := e.must(201, "POST", "/v1/users/alice/facts", `{"text":"Prefers answers in French","confidence":0.8,"source":{"session_id":"s1","step_seq":4}}`)
	r.json(t, &rem)
	if rem.Outcome != api.OutcomeAdded || rem.Fact.ID == "" || rem.Fact.EffectiveConfidence != 0.8 || rem.Fact.Source.SessionID != "s1" ||
		r.header.Get("Location") != "/v1/users/alice/facts/"+rem.Fact.ID {
		t.Fatalf("remember: %+v %v", rem, r.header)
	}
	id := rem.Fact.ID
	// The same fact again reinforces it: no duplicate.
	e.must(200, "POST", "/v1/users/alice/facts", `{"text":"prefers answers in French."}`).json(t, &rem)
	if rem.Outcome != api.OutcomeReinforced || rem.Fact.ID != id || rem.Fact.Confidence <= 0.8 {
		t.Errorf("reinforce: %+v", rem)
	}
	e.must(201, "POST", "/v1/users/alice/facts", `{"text":"Has a dog called Pixel","confidence":0.6}`)
	e.must(201, "POST", "/v1/users/bob/facts", `{"text":"Lives in Oslo"}`)

	// A day later (one half-life) confidence has decayed.
	now = now.Add(24 * time.Hour)
	var list api.FactsResponse
	e.must(200, "GET", "/v1/users/alice/facts", nil).json(t, &list)
	if len(list.Facts) != 2 || list.Facts[0].ID != id || list.Facts[0].EffectiveConfidence >= list.Facts[0].Confidence || list.Facts[0].Score != nil {
		t.Fatalf("list: %+v", list.Facts)
	}
	e.must(200, "GET", "/v1/users/alice/facts?q=what+pet+dog&k=1", nil).json(t, &list)
	if len(list.Facts) != 1 || list.Facts[0].Text != "Has a dog called Pixel" || list.Facts[0].Score == nil || *list.Facts[0].Score <= 0 {
		t.Errorf("search: %+v", list.Facts)
	}
	e.must(200, "GET", "/v1/users/alice/facts?min_confidence=0.4", nil).json(t, &list)
	if len(list.Facts) != 1 || list.Facts[0].ID != id {
		t.Errorf("min_confidence: %+v", list.Facts)
	}
	var one api.FactResponse
	e.must(200, "GET", "/v1/users/alice/facts/"+id, nil).json(t, &one)
	if one.Fact.ID != id || len(one.History) != 1 {
		t.Errorf("get: %+v", one)
	}
	// Bob's fact is not Alice's.
	e.must(404, "GET", "/v1/users/bob/facts/"+id, nil)
	e.must(404, "DELETE", "/v1/users/bob/facts/"+id, nil)

	before := e.dump()
	for _, tc := range []struct{ method, path, body, field string }{
		{"POST", "/v1/users/alice/facts", `{"text":""}`, "text"},
		{"POST", "/v1/users/alice/facts", `{"text":"x","confidence":1.5}`, "confidence"},
		{"POST", "/v1/users/alice/facts", `{"text":"x","confidence":"high"}`, "confidence"},
		{"POST", "/v1/users/alice/facts", `{"fact":"x"}`, "fact"},
		{"POST", "/v1/users/alice/facts", `{"text":"` + strings.Repeat("a", facts.MaxTextBytes+1) + `"}`, "text"},
		{"POST", "/v1/users/" + strings.Repeat("u", 300) + "/facts", `{"text":"x"}`, "user"},
		{"GET", "/v1/users/alice/facts?k=0", "", "k"},
		{"GET", "/v1/users/alice/facts?min_confidence=2", "", "min_confidence"},
		{"GET", "/v1/users/alice/facts?include_superseded=maybe", "", "include_superseded"},
		{"GET", "/v1/users/alice/facts?query=x", "", "query"},
		{"DELETE", "/v1/users/alice/facts/" + id + "?reason=" + strings.Repeat("r", MaxReasonBytes+1), "", "reason"},
	} {
		r := e.do(tc.method, tc.path, nilIfEmpty(tc.body))
		if r.code != 400 {
			t.Errorf("%s %.80s: status %d: %s", tc.method, tc.path, r.code, r.body)
			continue
		}
		if got := r.apiErr(t); got.Code != api.CodeInvalid || got.Field != tc.field {
			t.Errorf("%s %.80s: error %+v, want field %q", tc.method, tc.path, got, tc.field)
		}
	}
	e.must(200, "GET", "/v1/users/alice/facts", nil).json(t, &list)
	if len(list.Facts) != 2 || e.dump() != before {
		t.Errorf("refused requests changed the facts: %+v", list.Facts)
	}

	// Forgetting is for good, and audited.
	e.must(204, "DELETE", "/v1/users/alice/facts/"+id+"?reason=user+asked", nil)
	e.must(404, "GET", "/v1/users/alice/facts/"+id, nil)
	audit, err := e.srv.cfg.Facts.Audit(context.Background(), "", "alice")
	if err != nil {
		t.Fatal(err)
	}
	last := audit[len(audit)-1]
	if last.Action != facts.ActionForgotten || last.By != "api" || last.Reason != "user asked" {
		t.Errorf("audit: %+v", last)
	}
}

func TestLongTermNotConfigured(t *testing.T) {
	e := newEnv(t)
	for _, p := range [][2]string{
		{"GET", "/v1/recall/search?q=a"}, {"POST", "/v1/recall"}, {"GET", "/v1/recall/x"}, {"DELETE", "/v1/recall/x"},
		{"GET", "/v1/users/u/facts"}, {"POST", "/v1/users/u/facts"}, {"GET", "/v1/users/u/facts/f"}, {"DELETE", "/v1/users/u/facts/f"},
		{"PATCH", "/v1/users/u/facts/f"}, {"GET", "/v1/users/u/facts/f/history"},
	} {
		r := e.do(p[0], p[1], nil)
		if r.code != http.StatusNotImplemented || r.apiErr(t).Code != api.CodeNotConfigured {
			t.Errorf("%s %s: %d %s", p[0], p[1], r.code, r.body)
		}
	}
}

// Another tenant's facts and recall documents are not found, exactly as
// missing ones, and its searches see nothing of them.
func TestLongTermCrossTenant(t *testing.T) {
	now := fixedNow
	e := newAuthEnv(t, true, withLongTerm(&now))
	a, b := e.key("tenant-a"), e.key("tenant-b")
	e.mustAs(201, a, "POST", "/v1/sessions", `{"id":"a1","user_id":"alice"}`)
	e.mustAs(201, a, "POST", "/v1/sessions/a1/steps", `{"type":"task","task":"Rotate the SECRET-ZEBRA credentials"}`)
	e.mustAs(200, a, "POST", "/v1/recall", `{"documents":[{"id":"doc-a","text":"SECRET-ZEBRA runbook"}]}`)
	var rem api.RememberResponse
	e.mustAs(201, a, "POST", "/v1/users/alice/facts", `{"text":"Owns the SECRET-ZEBRA account"}`).json(t, &rem)

	probes := [][2]string{
		{"GET", "/v1/recall/doc-a"}, {"DELETE", "/v1/recall/doc-a"}, {"GET", "/v1/recall/" + url.PathEscape("a1#1")},
		{"GET", "/v1/users/alice/facts/" + rem.Fact.ID}, {"DELETE", "/v1/users/alice/facts/" + rem.Fact.ID},
		{"GET", "/v1/users/alice/facts/" + rem.Fact.ID + "/history"},
	}
	for _, p := range probes {
		got := e.as(b, p[0], p[1], "")
		missing := e.as(b, p[0], strings.NewReplacer("doc-a", "nobody", url.PathEscape("a1#1"), "nobody", rem.Fact.ID, "nobody").Replace(p[1]), "")
		if got.code != 404 || missing.code != 404 {
			t.Errorf("%s %s with B's key: %d %s", p[0], p[1], got.code, got.body)
		}
		if strings.Contains(string(got.body), "tenant-a") {
			t.Errorf("%s %s leaks the tenant: %s", p[0], p[1], got.body)
		}
	}
	if got := e.as(b, "PATCH", "/v1/users/alice/facts/"+rem.Fact.ID, `{"text":"Owned by B now"}`); got.code != 404 {
		t.Errorf("PATCH of A's fact with B's key: %d %s", got.code, got.body)
	}
	for _, p := range []string{"/v1/recall/search?q=SECRET-ZEBRA", "/v1/users/alice/facts", "/v1/users/alice/facts?q=SECRET-ZEBRA"} {
		if r := e.mustAs(200, b, "GET", p, ""); strings.Contains(string(r.body), "ZEBRA") {
			t.Errorf("B sees A's data at %s: %s", p, r.body)
		}
		if r := e.mustAs(200, a, "GET", p, ""); !strings.Contains(string(r.body), "ZEBRA") {
			t.Errorf("A does not see its own data at %s: %s", p, r.body)
		}
	}
}

// The MCP endpoint and the inspector are mounted behind the same keys.
func TestMountsNeedKeys(t *testing.T) {
	served := 0
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served++
		w.Write([]byte(Tenant(r)))
	})
	e := newAuthEnv(t, true, func(c *Config) {
		c.MCP = h
		c.Inspector = h
		c.InspectorPatterns = []string{"GET /{$}", "GET /sessions/{id}"}
	})
	a := e.key("tenant-a")
	for _, p := range [][2]string{{"POST", "/mcp"}, {"GET", "/"}, {"GET", "/sessions/x"}} {
		unauthorized(t, e.as("", p[0], p[1], ""), false)
		if r := e.mustAs(200, a, p[0], p[1], ""); string(r.body) != "tenant-a" {
			t.Errorf("%s %s: the handler sees tenant %q", p[0], p[1], r.body)
		}
	}
	if served != 3 {
		t.Errorf("served %d", served)
	}
	// A browser sends the key as a Basic password on the inspector's
	// pages, and is asked for one; the API takes only bearer keys.
	if ch := e.as("", "GET", "/", "").header.Values("WWW-Authenticate"); len(ch) != 2 || !strings.HasPrefix(ch[1], `Basic realm="agentmem inspector"`) {
		t.Errorf("inspector challenge: %q", ch)
	}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("anyone:"+strings.TrimPrefix(a, "Bearer ")))
	if r := e.mustAs(200, basic, "GET", "/sessions/x", ""); string(r.body) != "tenant-a" {
		t.Errorf("Basic on the inspector: tenant %q", r.body)
	}
	unauthorized(t, e.as(basic, "GET", "/v1/sessions", ""), true)
	if ch := e.as("", "GET", "/v1/sessions", "").header.Values("WWW-Authenticate"); len(ch) != 1 {
		t.Errorf("API challenge: %q", ch)
	}
	unauthorized(t, e.as("Basic "+base64.StdEncoding.EncodeToString([]byte("x:am_wrong_key")), "GET", "/", ""), true)
	// Paths the inspector does not claim stay JSON 404s.
	if r := e.as(a, "GET", "/nope", ""); r.code != 404 || r.apiErr(t).Code != api.CodeNotFound {
		t.Errorf("/nope: %d %s", r.code, r.body)
	}
}

// The context route injects the session user's relevant facts into the
// system prompt, within their share of the budget.
func TestContextInjectsFacts(t *testing.T) {
	now := fixedNow
	e := newEnv(t, withLongTerm(&now))
	e.create("s") // user u1
	e.appendSteps("s", "["+sysStep+","+taskStep+","+actionStep(1, strings.Repeat("parser output\n", 400))+","+actionStep(2, strings.Repeat("more output\n", 400))+"]")
	e.must(201, "POST", "/v1/users/u1/facts", `{"text":"Prefers table-driven tests in Go","confidence":0.9}`)
	e.must(201, "POST", "/v1/users/u1/facts", `{"text":"Works on the billing service","confidence":0.8}`)
	e.must(201, "POST", "/v1/users/u2/facts", `{"text":"OTHER-USER fact"}`)

	var plain, with api.ContextResponse
	e.must(200, "GET", "/v1/sessions/s/context?budget=3000", nil).json(t, &plain)
	e.must(200, "GET", "/v1/sessions/s/context?budget=3000&facts=5&facts_query=how+should+I+test+the+parser", nil).json(t, &with)
	if len(with.Facts) != 2 || with.Facts[0].Text != "Prefers table-driven tests in Go" {
		t.Fatalf("facts injected: %+v", with.Facts)
	}
	if with.Tokens > 3000 || with.Tokens <= plain.Tokens-int(0.1*3000) {
		t.Errorf("tokens %d with facts, %d without (budget 3000)", with.Tokens, plain.Tokens)
	}
	msgs, _ := json.Marshal(with.Messages)
	if !strings.Contains(string(msgs), facts.DefaultHeader) || !strings.Contains(string(msgs), "Prefers table-driven tests") || strings.Contains(string(msgs), "OTHER-USER") {
		t.Errorf("messages: %s", msgs)
	}
	// The count is exact: the same messages, counted by the library.
	sent, err := render.DecodeOpenAIMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := tokenizer.Get(tokenizer.O200kBase)
	if got := agentmem.RequestTokens(c, sent); got != with.Tokens {
		t.Errorf("reported %d tokens, the messages cost %d", with.Tokens, got)
	}
	// Without a budget every fact fits; in Anthropic's format they go to
	// the system prompt.
	var anth api.ContextResponse
	e.must(200, "GET", "/v1/sessions/s/context?format=anthropic&facts=1", nil).json(t, &anth)
	if len(anth.Facts) != 1 {
		t.Errorf("anthropic facts: %+v", anth.Facts)
	}
	if b, _ := json.Marshal(anth.Messages); !strings.Contains(string(b), `"system":"You are a careful coding agent.\n\n`+facts.DefaultHeader) {
		t.Errorf("anthropic system prompt: %s", b)
	}
	for _, q := range []string{"facts=-1", "facts=1000", "facts_query=x", "facts=1&facts_share=0", "facts=1&facts_share=abc"} {
		if r := e.do("GET", "/v1/sessions/s/context?"+q, nil); r.code != 400 {
			t.Errorf("%s: %d %s", q, r.code, r.body)
		}
	}
	e.must(201, "POST", "/v1/sessions", `{"id":"anon"}`)
	e.appendSteps("anon", sysStep)
	if r := e.do("GET", "/v1/sessions/anon/context?facts=3", nil); r.code != 400 || r.apiErr(t).Field != "facts" {
		t.Errorf("a session without a user: %d %s", r.code, r.body)
	}
	plainEnv := newEnv(t)
	plainEnv.create("s")
	if r := plainEnv.do("GET", "/v1/sessions/s/context?facts=3", nil); r.code != 501 {
		t.Errorf("without facts configured: %d %s", r.code, r.body)
	}
}

// The context route adds turns of the user's other sessions relevant to
// the newest question, within their share of the budget, and never the
// session's own.
func TestContextInjectsRecall(t *testing.T) {
	now := fixedNow
	e := newEnv(t, withLongTerm(&now))
	e.create("old") // user u1
	e.appendSteps("old", "["+sysStep+","+taskStep+`,{"type":"message","message":{"role":"user","content":"My dog Pixel hates thunderstorms"}}]`)
	e.create("s")
	e.appendSteps("s", "["+sysStep+`,{"type":"task","task":"What does my dog fear?"}]`)
	var res api.RecallSearchResponse
	e.must(200, "GET", "/v1/recall/search?q=dog&fresh=true", nil).json(t, &res)

	var plain, with api.ContextResponse
	e.must(200, "GET", "/v1/sessions/s/context?budget=3000", nil).json(t, &plain)
	e.must(200, "GET", "/v1/sessions/s/context?budget=3000&recall=3", nil).json(t, &with)
	if len(with.Recalled) == 0 || !strings.HasPrefix(with.Recalled[0], "old#") {
		t.Fatalf("recalled %v", with.Recalled)
	}
	for _, id := range with.Recalled {
		if strings.HasPrefix(id, "s#") {
			t.Errorf("the session's own turn %s was recalled into it", id)
		}
	}
	msgs, _ := json.Marshal(with.Messages)
	if !strings.Contains(string(msgs), "Pixel hates thunderstorms") || with.Tokens <= plain.Tokens || with.Tokens > 3000 {
		t.Errorf("tokens %d (plain %d), messages %s", with.Tokens, plain.Tokens, msgs)
	}
	if plain.Recalled != nil {
		t.Errorf("recalled without recall=K: %v", plain.Recalled)
	}
	for _, q := range []string{"recall=-1", "recall=51", "recall=x"} {
		if r := e.do("GET", "/v1/sessions/s/context?"+q, nil); r.code != 400 || r.apiErr(t).Field != "recall" {
			t.Errorf("%s: %d %s", q, r.code, r.body)
		}
	}
	plainEnv := newEnv(t)
	plainEnv.create("s")
	if r := plainEnv.do("GET", "/v1/sessions/s/context?recall=3", nil); r.code != 501 {
		t.Errorf("without recall configured: %d %s", r.code, r.body)
	}
}

// TestDeleteLeavesNothingFound: once DELETE /v1/sessions/{id} answers,
// a search (without fresh=true) finds nothing of the session: the delete
// waits for the recall view to follow it.
func TestDeleteLeavesNothingFound(t *testing.T) {
	now := fixedNow
	e := newEnv(t, withLongTerm(&now))
	for i := range 20 {
		id := fmt.Sprintf("s%d", i)
		e.create(id)
		e.appendSteps(id, `{"type":"message","message":{"role":"user","content":"the parrot is named Kiwi"}}`)
		var res api.RecallSearchResponse
		e.must(200, "GET", "/v1/recall/search?q=parrot&fresh=true", nil).json(t, &res)
		if len(res.Hits) != 1 {
			t.Fatalf("before the delete: %+v", res.Hits)
		}
		e.must(204, "DELETE", "/v1/sessions/"+id, nil)
		e.must(200, "GET", "/v1/recall/search?q=parrot", nil).json(t, &res)
		if len(res.Hits) != 0 {
			t.Fatalf("round %d: a search right after the delete found %+v", i, res.Hits)
		}
	}
}

// TestFreshRecallSearch checks read-your-writes on recall search: with
// fresh=true a search waits for the index to reach the writes before it,
// and answers 503 index_behind when the index cannot in time. /readyz
// reports the index's progress.
func TestFreshRecallSearch(t *testing.T) {
	now := fixedNow
	e := newEnv(t, withLongTerm(&now), func(c *Config) {
		c.IndexWait = 200 * time.Millisecond
	})
	e.create("s1")
	e.appendSteps("s1", `{"type":"message","message":{"role":"user","content":"the parrot is named Kiwi"}}`)
	var res api.RecallSearchResponse
	e.must(200, "GET", "/v1/recall/search?q=parrot&fresh=true", nil).json(t, &res)
	if len(res.Hits) != 1 || res.Hits[0].ID != "s1#1" {
		t.Fatalf("fresh search right after the append: %+v", res.Hits)
	}
	var ready api.ReadyResponse
	e.must(200, "GET", "/readyz", nil).json(t, &ready)
	if ready.RecallIndex == nil || !ready.RecallIndex.Running || ready.RecallIndex.Applied < 1 {
		t.Fatalf("readyz: %+v", ready.RecallIndex)
	}
	e.must(400, "GET", "/v1/recall/search?q=parrot&fresh=maybe", nil)

	// With the follower stopped, a fresh search cannot see a new write:
	// 503 index_behind, while a plain search answers with what is indexed.
	e.stopIndex()
	e.appendSteps("s1", `{"type":"message","message":{"role":"user","content":"the parrot also likes grapes"}}`)
	r := e.do("GET", "/v1/recall/search?q=grapes&fresh=true", nil)
	if r.code != 503 || r.header.Get("Retry-After") == "" || r.apiErr(t).Code != api.CodeIndexBehind {
		t.Fatalf("fresh search with the index stopped: %d %s", r.code, r.body)
	}
	e.must(200, "GET", "/v1/recall/search?q=grapes", nil).json(t, &res)
	if len(res.Hits) != 0 {
		t.Fatalf("the stopped index found %+v", res.Hits)
	}
	e.must(200, "GET", "/readyz", nil).json(t, &ready)
	if ready.RecallIndex == nil || ready.RecallIndex.Running {
		t.Fatalf("readyz with the follower stopped: %+v", ready.RecallIndex)
	}
	// The metrics have the index's lag.
	if body := string(e.must(200, "GET", "/metrics", nil).body); !strings.Contains(body, "agentmem_recall_index_lag_seconds_count") {
		t.Fatal("/metrics has no agentmem_recall_index_lag_seconds")
	}
}

// TestDisconnectedAppendIsIndexed: a client that sends an append and goes
// away without reading the answer leaves the turn stored and indexed (it
// used to be stored but never indexed: indexing ran on the request's
// context, which the disconnect canceled).
func TestDisconnectedAppendIsIndexed(t *testing.T) {
	now := fixedNow
	e := newEnv(t, withLongTerm(&now))
	e.create("s1")
	ts := httptest.NewServer(e.srv)
	defer ts.Close()
	const turns = 40
	for i := range turns {
		body := fmt.Sprintf(`{"role":"user","content":"note number %d mentions the word zebra%s"}`, i, strings.Repeat("q", i+1))
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /v1/sessions/s1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		conn.Close() // gone before the answer
	}
	// Wait until the server has finished the 20 requests (its request
	// counter), then every turn it stored must be found by a fresh search.
	// (A request whose disconnect the server noticed before the append
	// committed is not stored: it was never acknowledged.)
	deadline := time.Now().Add(10 * time.Second)
	for served := 0; served < turns; {
		if time.Now().After(deadline) {
			t.Fatalf("the server finished %d of %d requests", served, turns)
		}
		served = 0
		for _, line := range strings.Split(string(e.must(200, "GET", "/metrics", nil).body), "\n") {
			if strings.HasPrefix(line, "agentmem_http_requests_total{") && strings.Contains(line, `route="POST /v1/sessions/{id}/messages"`) {
				n, _ := strconv.Atoi(line[strings.LastIndex(line, " ")+1:])
				served += n
			}
		}
		time.Sleep(5 * time.Millisecond) // polling the server's progress, bounded
	}
	var steps readSteps
	e.must(200, "GET", "/v1/sessions/s1/steps", nil).json(t, &steps)
	if len(steps.Steps) == 0 {
		// Every request was canceled before its append committed: this
		// run checked nothing (the server noticed each disconnect first).
		t.Fatalf("none of the %d appends was stored", turns)
	}
	stored := map[int]bool{}
	for _, st := range steps.Steps {
		var n int
		if _, err := fmt.Sscanf(st.(*agentmem.TaskStep).Task, "note number %d", &n); err == nil {
			stored[n] = true
		}
	}
	for i := range turns {
		if !stored[i] {
			continue
		}
		var res api.RecallSearchResponse
		e.must(200, "GET", "/v1/recall/search?k=1&fresh=true&q=zebra"+strings.Repeat("q", i+1), nil).json(t, &res)
		if len(res.Hits) != 1 || !strings.Contains(res.Hits[0].Text, fmt.Sprintf("note number %d ", i)) {
			t.Fatalf("turn %d: %+v", i, res.Hits)
		}
	}
}

// The seeds' vector store: upsert without an ID, search with a metadata
// filter, and TF-IDF cosine when asked (BM25 stays the default).
func TestRecallSearchSimilarityAndFilter(t *testing.T) {
	now := fixedNow
	e := newEnv(t, withLongTerm(&now))
	var up api.UpsertRecallResponse
	e.must(200, "POST", "/v1/recall", `{"documents":[
		{"text":"The quick brown fox","metadata":{"tag":"animal"}},
		{"text":"The lazy dog sleeps while the quick fox runs and jumps and runs","metadata":{"tag":"animal"}},
		{"text":"quarterly report on the brown company","metadata":{"tag":"work"}}]}`).json(t, &up)
	if len(up.IDs) != 3 || up.IDs[0] == "" || up.IDs[0] == up.IDs[1] {
		t.Fatalf("generated IDs %v", up.IDs)
	}
	var tf, bm api.RecallSearchResponse
	e.must(200, "GET", "/v1/recall/search?q=quick+fox&similarity=tfidf", nil).json(t, &tf)
	e.must(200, "GET", "/v1/recall/search?q=quick+fox", nil).json(t, &bm)
	if len(tf.Hits) != 2 || tf.Hits[0].ID != up.IDs[0] || tf.Hits[0].Score > 1 || tf.Hits[0].Score <= tf.Hits[1].Score {
		t.Fatalf("tfidf hits %+v; want the short fox document first, cosine scores", tf.Hits)
	}
	if len(bm.Hits) == 0 || bm.Hits[0].Score == tf.Hits[0].Score {
		t.Fatalf("the default search scored as tfidf: %+v", bm.Hits)
	}
	var f api.RecallSearchResponse
	e.must(200, "GET", "/v1/recall/search?q=brown&filter=tag:work&similarity=tfidf", nil).json(t, &f)
	if len(f.Hits) != 1 || f.Hits[0].ID != up.IDs[2] {
		t.Fatalf("filter=tag:work found %+v", f.Hits)
	}
	for path, field := range map[string]string{
		"/v1/recall/search?q=fox&similarity=cosine":                     "similarity",
		"/v1/recall/search?q=fox&filter=nocolon":                        "filter",
		"/v1/recall/search?q=fox&filter=:x":                             "filter",
		"/v1/recall/search?q=fox&filter=tag:a&filter=tag:b":             "filter",
		"/v1/recall/search?q=fox&scope=user:u1&filter=user:u2":          "filter",
		"/v1/recall/search?q=fox&filter=" + url.QueryEscape("tag:\xff"): "filter",
	} {
		r := e.must(400, "GET", path, nil)
		if err := r.apiErr(t); err.Code != api.CodeInvalid || !strings.HasPrefix(err.Field, field) {
			t.Errorf("%s: %+v, want invalid %s", path, err, field)
		}
	}
}
