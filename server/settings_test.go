package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/store"
)

// chatMessages is a system prompt and n turns of a chat (a question and a
// long answer), as the body of POST /messages.
func chatMessages(n int) string {
	msgs := []string{`{"role":"system","content":"You are terse."}`}
	for i := range n {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"Q%d: what is the weather in city %d?"}`, i, i),
			fmt.Sprintf(`{"role":"assistant","content":"A%d: %s"}`, i, strings.Repeat("mild and dry ", 30)))
	}
	return "[" + strings.Join(msgs, ",") + "]"
}

// showsQ0 reports whether a context's messages hold the first question.
func showsQ0(c api.ContextResponse) bool {
	return strings.Contains(fmt.Sprint(c.Messages), "Q0:")
}

// TestSessionSettingsHTTP: POST /v1/sessions takes a pinning and an
// automatic compaction, GET returns them as they apply (the defaults
// filled in), and the session's contexts pin what it says: with only the
// system prompts pinned, turn 0 leaves the context under a small budget
// and after keep_last_n; with the default it stays.
func TestSessionSettingsHTTP(t *testing.T) {
	e := newEnv(t)
	var def, sys store.Session
	e.must(201, "POST", "/v1/sessions", `{"id":"default"}`).json(t, &def)
	e.must(201, "POST", "/v1/sessions", `{"id":"sys","pinning":{"system_prompts":true},"auto_compact":{"max_tokens":8000}}`).json(t, &sys)
	if def.Pinning == nil || *def.Pinning != agentmem.DefaultPinning || def.AutoCompact != nil {
		t.Errorf("a session created without settings: %+v, %+v", def.Pinning, def.AutoCompact)
	}
	r := e.must(200, "GET", "/v1/sessions/sys", nil)
	if !strings.Contains(string(r.body), `"pinning":{"system_prompts":true,"first_task":false,"tasks":false,"summary":false},"auto_compact":{"max_tokens":8000,"target_tokens":4000,"keep_recent":6,"summarizer":"extractive"}`) {
		t.Errorf("GET: %s", r.body)
	}
	for _, id := range []string{"default", "sys"} {
		e.must(201, "POST", "/v1/sessions/"+id+"/messages", chatMessages(8))
	}
	for id, want := range map[string]bool{"default": true, "sys": false} {
		var c api.ContextResponse
		e.must(200, "GET", "/v1/sessions/"+id+"/context?budget=400", nil).json(t, &c)
		if showsQ0(c) != want {
			t.Errorf("%s: the context of budget 400 shows Q0: %v, want %v", id, showsQ0(c), want)
		}
		e.must(200, "POST", "/v1/sessions/"+id+"/compact", `{"strategy":"keep_last_n","n":2}`)
		e.must(200, "GET", "/v1/sessions/"+id+"/context", nil).json(t, &c)
		if showsQ0(c) != want {
			t.Errorf("%s: after keep_last_n 2 the context shows Q0: %v, want %v", id, showsQ0(c), want)
		}
	}
	// A fork takes its parent's settings unless it gives its own.
	var b store.Session
	e.must(201, "POST", "/v1/sessions/sys/fork", `{"id":"b"}`).json(t, &b)
	if *b.Pinning != *sys.Pinning || *b.AutoCompact != *sys.AutoCompact {
		t.Errorf("a fork: %+v, %+v", b.Pinning, b.AutoCompact)
	}
	e.must(201, "POST", "/v1/sessions/sys/fork", `{"id":"b2","pinning":{"tasks":true},"auto_compact":{"max_tokens":100,"target_tokens":90,"keep_recent":1,"summarizer":"extractive"}}`).json(t, &b)
	if *b.Pinning != (agentmem.Pinning{Tasks: true}) || *b.AutoCompact != (store.AutoCompact{MaxTokens: 100, TargetTokens: 90, KeepRecent: 1, Summarizer: "extractive"}) {
		t.Errorf("a fork with its own settings: %+v, %+v", b.Pinning, b.AutoCompact)
	}
}

// TestSessionSettingsBadInput: bad settings are 422 (400 for a body that
// does not decode) with the field named, and create nothing.
func TestSessionSettingsBadInput(t *testing.T) {
	e := newEnv(t)
	e.create("p")
	before := e.dump()
	for body, field := range map[string]string{
		`{"auto_compact":{}}`:                                      "auto_compact.max_tokens",
		`{"auto_compact":{"max_tokens":-1}}`:                       "auto_compact.max_tokens",
		`{"auto_compact":{"max_tokens":100,"target_tokens":100}}`:  "auto_compact.target_tokens",
		`{"auto_compact":{"max_tokens":100,"target_tokens":-3}}`:   "auto_compact.target_tokens",
		`{"auto_compact":{"max_tokens":100,"keep_recent":-1}}`:     "auto_compact.keep_recent",
		`{"auto_compact":{"max_tokens":100,"summarizer":"magic"}}`: "auto_compact.summarizer",
		`{"auto_compact":{"max_tokens":100,"summarizer":"llm"}}`:   "auto_compact.summarizer",
		`{"pinning":{"system_prompts":true,"everything":true}}`:    "pinning.everything",
		`{"pinning":{"system_prompts":"yes"}}`:                     "pinning.system_prompts",
		`{"pinning":[]}`:                                           "pinning",
		`{"auto_compact":{"max_tokens":100,"min_tokens":1}}`:       "auto_compact.min_tokens",
		`{"auto_compact":{"max_tokens":1.5}}`:                      "auto_compact.max_tokens",
	} {
		for _, path := range []string{"/v1/sessions", "/v1/sessions/p/fork"} {
			r := e.do("POST", path, body)
			if r.code != 422 && r.code != 400 {
				t.Errorf("POST %s %s: %d %s", path, body, r.code, r.body)
				continue
			}
			if err := r.apiErr(t); err.Field != field {
				t.Errorf("POST %s %s: field %q, want %q (%s)", path, body, err.Field, field, err.Message)
			}
		}
	}
	if e.dump() != before {
		t.Error("a refused request changed the store")
	}
}
