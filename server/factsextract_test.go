package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/llm"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/views"
	"github.com/agentmem/agentmem/views/factextract"
)

// extractionModel is a stand-in for an OpenAI-compatible chat model as
// facts.LLMExtractor calls it: it reads the known facts and the turn the
// extractor sends, and answers decisions computed from them (down, it
// answers 503).
type extractionModel struct {
	down  atomic.Bool
	calls atomic.Int32
}

// client returns a real llm.Client of a new stand-in server.
func (m *extractionModel) client(t *testing.T) *llm.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", Model: "test-model", MaxRetries: -1, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (m *extractionModel) serve(w http.ResponseWriter, r *http.Request) {
	m.calls.Add(1)
	if m.down.Load() {
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
		return
	}
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	var in struct {
		Known []struct{ ID, Text string } `json:"known_facts"`
		Turn  []struct{ Role, Content string }
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) < 2 ||
		json.Unmarshal([]byte(req.Messages[1].Content), &in) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": extractionAnswer(in.Known, in.Turn)}}},
	})
}

// extractionAnswer decides from the user's messages of a turn: "I live in
// X" adds "Lives in X.", or supersedes the known fact of another city;
// "tea" reinforces a known fact about tea; anything else is ignored.
func extractionAnswer(known []struct{ ID, Text string }, turn []struct{ Role, Content string }) string {
	var ds []string
	for _, msg := range turn {
		if msg.Role != "user" {
			continue
		}
		if _, city, ok := strings.Cut(msg.Content, "I live in "); ok {
			city = strings.Trim(strings.Fields(city)[0], ".!,")
			d := fmt.Sprintf(`{"action":"add","text":"Lives in %s."}`, city)
			for _, k := range known {
				if strings.HasPrefix(k.Text, "Lives in ") && k.Text != "Lives in "+city+"." {
					d = fmt.Sprintf(`{"action":"supersede","id":%q,"text":"Lives in %s.","confidence":0.9}`, k.ID, city)
				}
			}
			ds = append(ds, d)
		}
		if strings.Contains(msg.Content, "tea") {
			for _, k := range known {
				if strings.Contains(k.Text, "tea") {
					ds = append(ds, fmt.Sprintf(`{"action":"reinforce","id":%q}`, k.ID))
				}
			}
		}
	}
	if len(ds) == 0 {
		ds = append(ds, `{"action":"ignore"}`)
	}
	return `{"decisions":[` + strings.Join(ds, ",") + `]}`
}

// withExtractor gives the server a facts memory and an LLM extractor of
// the model.
func withExtractor(t *testing.T, model *extractionModel) func(*Config) {
	return func(c *Config) {
		c.Facts = facts.New(facts.NewMemStore(), facts.Options{Clock: func() time.Time { return fixedNow }})
		c.Extractor = &facts.LLMExtractor{Client: model.client(t)}
	}
}

func TestExtractFactsRoute(t *testing.T) {
	model := &extractionModel{}
	e := newEnv(t, withExtractor(t, model))
	var tea api.RememberResponse
	e.must(201, "POST", "/v1/users/alice/facts", `{"text":"Drinks green tea."}`).json(t, &tea)

	var first api.ExtractFactsResponse
	e.must(200, "POST", "/v1/users/alice/facts/extract", `{"messages":[
		{"role":"user","content":"Hi! I live in Berlin, and I still drink tea every morning."},
		{"role":"assistant","content":"Nice to meet you."}],"source":{"agent":"support-bot"}}`).json(t, &first)
	if len(first.Decisions) != 2 {
		t.Fatalf("decisions %+v, want an add and a reinforce", first.Decisions)
	}
	add, again := first.Decisions[0], first.Decisions[1]
	if add.Action != "add" || add.Outcome != "added" || add.Fact == nil || add.Fact.Text != "Lives in Berlin." ||
		add.Fact.UserID != "alice" || add.Fact.Source.Agent != "support-bot" {
		t.Errorf("add = %+v", add)
	}
	if again.Action != "reinforce" || again.Outcome != "reinforced" || again.Fact == nil || again.Fact.ID != tea.Fact.ID || again.Fact.Reinforcements != 1 {
		t.Errorf("reinforce = %+v", again)
	}

	var second api.ExtractFactsResponse
	e.must(200, "POST", "/v1/users/alice/facts/extract", `{"messages":[{"role":"user","content":"I live in Paris now."}]}`).json(t, &second)
	if len(second.Decisions) != 1 {
		t.Fatalf("decisions %+v", second.Decisions)
	}
	sup := second.Decisions[0]
	if sup.Action != "supersede" || sup.Outcome != "superseded" || sup.Fact == nil || sup.Fact.Text != "Lives in Paris." ||
		sup.Previous == nil || sup.Previous.ID != add.Fact.ID || sup.Previous.SupersededBy != sup.Fact.ID {
		t.Errorf("supersede = %+v", sup)
	}
	var ignored api.ExtractFactsResponse
	e.must(200, "POST", "/v1/users/alice/facts/extract", `{"messages":{"role":"user","content":"What time is it?"}}`).json(t, &ignored)
	if len(ignored.Decisions) != 0 { // LLMExtractor drops ignore decisions
		t.Errorf("decisions %+v, want none", ignored.Decisions)
	}

	// The facts are the user's, as any route shows them; bob has none.
	var list api.FactsResponse
	e.must(200, "GET", "/v1/users/alice/facts", nil).json(t, &list)
	var texts []string
	for _, f := range list.Facts {
		texts = append(texts, f.Text)
	}
	if strings.Join(texts, "|") != "Drinks green tea.|Lives in Paris." && strings.Join(texts, "|") != "Lives in Paris.|Drinks green tea." {
		t.Errorf("alice's facts: %q", texts)
	}
	e.must(200, "GET", "/v1/users/bob/facts", nil).json(t, &list)
	if len(list.Facts) != 0 {
		t.Errorf("bob's facts: %+v", list.Facts)
	}

	// A model that is down is a 502 naming the extractor, and nothing is
	// written.
	model.down.Store(true)
	r := e.do("POST", "/v1/users/bob/facts/extract", `{"messages":[{"role":"user","content":"I live in Rome."}]}`)
	if r.code != http.StatusBadGateway {
		t.Fatalf("model down: status %d %s", r.code, r.body)
	}
	if ae := r.apiErr(t); ae.Code != api.CodeExtractionFailed || ae.Field != "extractor" {
		t.Errorf("model down: %+v", ae)
	}
	e.must(200, "GET", "/v1/users/bob/facts", nil).json(t, &list)
	if len(list.Facts) != 0 {
		t.Errorf("bob's facts after a failed extraction: %+v", list.Facts)
	}
}

func TestExtractFactsBadInput(t *testing.T) {
	model := &extractionModel{}
	e := newEnv(t, withExtractor(t, model))
	for _, tc := range []struct{ body, field string }{
		{`{}`, "messages"},
		{`{"messages":null}`, "messages"},
		{`{"messages":[]}`, "messages"},
		{`{"messages":[{"role":"robot","content":"hi"}]}`, "messages[0].role"},
		{`{"messages":[{"role":"user","content":"hi"}],"extra":1}`, "extra"},
		{`{"messages":[{"role":"user","content":"hi"}],"source":{"step_seq":"x"}}`, "source.step_seq"},
	} {
		r := e.do("POST", "/v1/users/alice/facts/extract", tc.body)
		if r.code != http.StatusBadRequest {
			t.Errorf("%s: status %d %s", tc.body, r.code, r.body)
			continue
		}
		if ae := r.apiErr(t); ae.Field != tc.field {
			t.Errorf("%s: field %q, want %q (%s)", tc.body, ae.Field, tc.field, ae.Message)
		}
	}
	if n := model.calls.Load(); n != 0 {
		t.Errorf("bad input reached the model %d times", n)
	}
}

func TestExtractFactsNotConfigured(t *testing.T) {
	body := `{"messages":[{"role":"user","content":"I live in Rome."}]}`
	for name, opt := range map[string]func(*Config){
		"no facts":     func(*Config) {},
		"no extractor": func(c *Config) { c.Facts = facts.New(facts.NewMemStore(), facts.Options{}) },
	} {
		e := newEnv(t, opt)
		r := e.do("POST", "/v1/users/alice/facts/extract", body)
		if r.code != http.StatusNotImplemented || r.apiErr(t).Code != api.CodeNotConfigured {
			t.Errorf("%s: status %d %s", name, r.code, r.body)
		}
	}
}

// TestExtractFactsSetting: a session's "extract_facts" decides whether
// the background extraction (a factextract.Learner selecting with the
// service's Extracts) learns from its turns: true opts in where the
// server's default is off, false out where it is on, absent follows the
// default. The setting is returned as given and a branch inherits it.
func TestExtractFactsSetting(t *testing.T) {
	for _, byDefault := range []bool{false, true} {
		t.Run(fmt.Sprintf("default=%v", byDefault), func(t *testing.T) {
			model := &extractionModel{}
			var svc *sessions.Service
			e := newEnv(t, withExtractor(t, model), func(c *Config) {
				var err error
				svc, err = sessions.New(sessions.Config{Store: c.Store, Clock: c.Clock, Facts: c.Facts, Extraction: true, ExtractByDefault: byDefault})
				if err != nil {
					t.Fatal(err)
				}
				c.Sessions = svc
			})
			l, stop, err := factextract.Start(svc, e.mem, factextract.Config{Facts: e.srv.cfg.Facts, Extractor: e.srv.cfg.Extractor, Select: svc.Extracts,
				Follow: views.Options{Settle: -1}})
			if err != nil || l == nil {
				t.Fatalf("factextract.Start: %v, %v", l, err)
			}
			defer stop()
			e.must(201, "POST", "/v1/sessions", `{"id":"in","user_id":"u-in","extract_facts":true}`)
			e.must(201, "POST", "/v1/sessions", `{"id":"out","user_id":"u-out","extract_facts":false}`)
			e.must(201, "POST", "/v1/sessions", `{"id":"default","user_id":"u-default"}`)
			e.must(201, "POST", "/v1/sessions", `{"id":"seed","user_id":"u-branch","extract_facts":false}`)
			e.must(201, "POST", "/v1/sessions/seed/messages", `{"role":"system","content":"Be brief."}`)
			e.must(201, "POST", "/v1/sessions/seed/fork", `{"id":"branch"}`)
			want := map[string]string{"in": "true", "out": "false", "default": "-", "seed": "false", "branch": "false"}
			for id, w := range want {
				var s api.Session
				e.must(200, "GET", "/v1/sessions/"+id, nil).json(t, &s)
				got := "-"
				if s.ExtractFacts != nil {
					got = fmt.Sprint(*s.ExtractFacts)
				}
				if got != w {
					t.Errorf("session %s: extract_facts %s, want %s", id, got, w)
				}
			}
			for _, id := range []string{"in", "out", "default", "branch"} {
				e.must(201, "POST", "/v1/sessions/"+id+"/messages", `[{"role":"user","content":"I live in Oslo."},{"role":"assistant","content":"Noted."}]`)
			}
			if err := l.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			learnt := map[string]bool{"u-in": true, "u-out": false, "u-default": byDefault, "u-branch": false}
			for user, w := range learnt {
				var list api.FactsResponse
				e.must(200, "GET", "/v1/users/"+user+"/facts", nil).json(t, &list)
				if got := len(list.Facts) == 1 && list.Facts[0].Text == "Lives in Oslo."; got != w || len(list.Facts) > 1 {
					t.Errorf("%s's facts %+v: learnt %v, want %v", user, list.Facts, got, w)
				}
			}
		})
	}
}

// TestExtractFactsSettingRefused: opting in is refused, with nothing
// created, without a user (the facts are the user's) and on a server
// that extracts nothing; opting out is always accepted.
func TestExtractFactsSettingRefused(t *testing.T) {
	e := newEnv(t, withExtractor(t, &extractionModel{})) // the route's extractor, but no background extraction
	for _, body := range []string{`{"id":"s","user_id":"u","extract_facts":true}`, `{"id":"s","extract_facts":true}`} {
		r := e.do("POST", "/v1/sessions", body)
		if ae := r.apiErr(t); r.code != http.StatusBadRequest || ae.Field != "extract_facts" || ae.Code != api.CodeInvalid {
			t.Errorf("%s: %d %s", body, r.code, r.body)
		}
	}
	e.must(404, "GET", "/v1/sessions/s", nil)
	e.must(201, "POST", "/v1/sessions", `{"id":"off","extract_facts":false}`)
	e.must(201, "POST", "/v1/sessions", `{"id":"p","user_id":"u"}`)
	r := e.do("POST", "/v1/sessions/p/fork", `{"extract_facts":true}`)
	if ae := r.apiErr(t); r.code != http.StatusBadRequest || ae.Field != "extract_facts" {
		t.Errorf("fork opting in: %d %s", r.code, r.body)
	}
	r = e.do("POST", "/v1/sessions", `{"id":"bad","user_id":"u","extract_facts":"yes"}`)
	if ae := r.apiErr(t); r.code != http.StatusBadRequest || ae.Field != "extract_facts" {
		t.Errorf("a string: %d %s", r.code, r.body)
	}
}
