package proxy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/proxy/proxytest"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/store"
)

// TestRefusedRequestChangesNothing: a request the proxy refuses, with
// 400 or 422, changes nothing: it creates no session, records none of
// its messages, amends no system prompt, and does not reach the
// upstream.
func TestRefusedRequestChangesNothing(t *testing.T) {
	fm := facts.New(facts.NewMemStore(), facts.Options{})
	e := newEnv(t, func(_ *proxy.Config, sc *server.Config) { sc.Facts = fm })
	long := strings.Repeat("You are a very careful agent with a very long system prompt. ", 20)
	user := func(s string) any { return map[string]any{"role": "user", "content": s} }
	sys := func(s string) any { return map[string]any{"role": "system", "content": s} }
	type refusal struct {
		name   string
		header map[string]string
		body   map[string]any
		status int
		code   string
	}
	refusals := func(sid string) []refusal {
		h := func(kv ...string) map[string]string {
			m := map[string]string{proxy.HeaderSession: sid}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i]] = kv[i+1]
			}
			return m
		}
		msgs := []any{sys(long), user("a question"), user("another question")}
		return []refusal{
			{"pinned steps over the budget", h(proxy.HeaderBudget, "50"), map[string]any{"model": "gpt-4o", "messages": msgs}, 422, api.CodeBudgetTooSmall},
			{"a budget over the server's maximum", h(proxy.HeaderBudget, "999999999"), map[string]any{"model": "gpt-4o", "messages": msgs}, 400, api.CodeInvalid},
			{"a full context window", h(), map[string]any{"model": "gpt-4", "max_tokens": 9000, "messages": msgs}, 400, api.CodeInvalid},
			{"facts without a user", h(proxy.HeaderFacts, "2"), map[string]any{"model": "gpt-4o", "messages": msgs}, 400, api.CodeInvalid},
			{"a result of no call", h(), map[string]any{"model": "gpt-4o", "messages": append(msgs, map[string]any{"role": "tool", "tool_call_id": "nope", "content": "x"})}, 400, api.CodeInvalid},
		}
	}
	check := func(what string, r response, want refusal) {
		t.Helper()
		var eb api.ErrorBody
		if err := json.Unmarshal(r.body, &eb); err != nil || r.status != want.status || eb.Error.Code != want.code {
			t.Errorf("%s: %d %s, want %d %s", what, r.status, r.body, want.status, want.code)
		}
	}
	// A request that would create its session.
	for _, c := range refusals("fresh") {
		check("a new session, "+c.name, e.post(t, "/v1/chat/completions", c.header, c.body), c)
		if _, err := e.svc.Get(t.Context(), "", "fresh"); !errors.Is(err, agentmem.ErrNotFound) {
			t.Fatalf("a new session, %s: the session was created (%v)", c.name, err)
		}
	}
	if n := len(e.up.Received()); n != 0 {
		t.Fatalf("the upstream got %d requests", n)
	}
	// An existing session: its log does not move.
	r := e.post(t, "/v1/chat/completions", map[string]string{proxy.HeaderSession: "held"}, map[string]any{"model": "gpt-4o", "messages": []any{sys("Be brief."), user("a question")}})
	reply, _ := openAIReply(t, r, false)
	sess, err := e.svc.Get(t.Context(), "", "held")
	if err != nil {
		t.Fatal(err)
	}
	before := wire(t, e.held(t, "held"))
	for _, c := range refusals("held") {
		// The whole history, with a longer system prompt and a new
		// message.
		c.body["messages"] = append([]any{sys(long), user("a question"), reply}, c.body["messages"].([]any)[2:]...)
		check("an existing session, "+c.name, e.post(t, "/v1/chat/completions", c.header, c.body), c)
		got, err := e.svc.Get(t.Context(), "", "held")
		if err != nil || got.LastSeq != sess.LastSeq {
			t.Errorf("an existing session, %s: the log went from %d to %d entries (%v)", c.name, sess.LastSeq, got.LastSeq, err)
		}
		if now := wire(t, e.held(t, "held")); now != before {
			t.Errorf("an existing session, %s: the session holds %s", c.name, now)
		}
	}
	// The pinned steps already over the budget, with new messages only.
	c := refusals("held")[0]
	c.header[proxy.HeaderBudget] = "5"
	c.body["messages"] = []any{user("one more")}
	check("an existing session, new messages only", e.post(t, "/v1/chat/completions", c.header, c.body), c)
	if got, _ := e.svc.Get(t.Context(), "", "held"); got.LastSeq != sess.LastSeq {
		t.Errorf("new messages only: the log went from %d to %d entries", sess.LastSeq, got.LastSeq)
	}
	if n := len(e.up.Received()); n != 1 {
		t.Errorf("the upstream got %d requests, want the one accepted", n)
	}
	// What fits is accepted, and recorded.
	r = e.post(t, "/v1/chat/completions", map[string]string{proxy.HeaderSession: "held"}, map[string]any{"model": "gpt-4o", "messages": []any{sys("Be brief."), user("a question"), reply, user("and then?")}})
	if r.status != 200 || r.header.Get(proxy.HeaderAppended) != "1" {
		t.Errorf("a request that fits: %d %v", r.status, r.header)
	}
	if list, err := e.svc.List(t.Context(), store.ListRequest{}); err != nil || len(list.Sessions) != 1 {
		t.Errorf("sessions: %v %v", list, err)
	}
}

// TestRewindCheckedBeforePops: a request that rewinds the session (an
// edited tool result, which leaves its action in the working set without
// it) is checked on what the pops would leave: accepted when that holds,
// refused with nothing popped when its steps would not fit.
func TestRewindCheckedBeforePops(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Script = func(_ string, n int, _ []any) proxytest.Reply {
		if n == 0 {
			return proxytest.Reply{Calls: []proxytest.Call{{ID: "a", Name: "lookup", Args: `{}`}, {ID: "b", Name: "lookup", Args: `{}`}}}
		}
		return proxytest.Reply{Text: "done"}
	}
	hdr := map[string]string{proxy.HeaderSession: "rw"}
	h := []any{map[string]any{"role": "system", "content": "Be brief."}, map[string]any{"role": "user", "content": "look both up"}}
	r := e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": h})
	reply, _ := openAIReply(t, r, false)
	tool := func(id, s string) any { return map[string]any{"role": "tool", "tool_call_id": id, "content": s} }
	h = append(h, reply, tool("a", "result a"), tool("b", "result b"))
	if r = e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": h}); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	sess, _ := e.svc.Get(t.Context(), "", "rw")
	// The result of b edited, with a budget the pinned steps do not fit:
	// refused, nothing popped.
	edited := append(append([]any{}, h[:4]...), tool("b", "result b, edited"))
	r = e.post(t, "/v1/chat/completions", map[string]string{proxy.HeaderSession: "rw", proxy.HeaderBudget: "5"}, map[string]any{"model": "gpt-4o", "messages": edited})
	if got, _ := e.svc.Get(t.Context(), "", "rw"); r.status != 422 || got.LastSeq != sess.LastSeq {
		t.Errorf("refused: %d, the log went from %d to %d entries", r.status, sess.LastSeq, got.LastSeq)
	}
	// Within the budget: b's result popped, the edited one appended.
	r = e.post(t, "/v1/chat/completions", hdr, map[string]any{"model": "gpt-4o", "messages": edited})
	if r.status != 200 || r.header.Get(proxy.HeaderHistory) != "rewind" || r.header.Get(proxy.HeaderRewound) != "2" || r.header.Get(proxy.HeaderAppended) != "1" {
		t.Errorf("an edited result: %d %s %v", r.status, r.body, r.header)
	}
}

// TestRefusalFollowsTheSessionsPinning: what must fit the budget before
// anything is written is what the session pins (its own pinning, fixed
// at its creation), not the default: a session that pins every task is
// refused a new question its pins would not fit, one that pins only its
// system prompt is not.
func TestRefusalFollowsTheSessionsPinning(t *testing.T) {
	e := newEnv(t, nil)
	question := strings.Repeat("a long question with many words in it ", 10)
	for _, c := range []struct {
		pin    agentmem.Pinning
		status int
	}{
		{agentmem.Pinning{SystemPrompts: true, Tasks: true}, 422},
		{agentmem.Pinning{SystemPrompts: true}, 200},
	} {
		sid := fmt.Sprintf("pin-%v", c.pin.Tasks)
		pin := c.pin
		if _, err := e.svc.Create(t.Context(), store.CreateRequest{ID: sid, Pinning: &pin}); err != nil {
			t.Fatal(err)
		}
		first := []any{map[string]any{"role": "system", "content": "Be brief."}, map[string]any{"role": "user", "content": question}}
		r := e.post(t, "/v1/chat/completions", map[string]string{proxy.HeaderSession: sid}, map[string]any{"model": "gpt-4o", "messages": first})
		reply, _ := openAIReply(t, r, false)
		sess, _ := e.svc.Get(t.Context(), "", sid)
		// The budget holds the first question pinned, not a second one.
		budget := r.header.Get(proxy.HeaderContextTokens)
		h := append(first, reply, map[string]any{"role": "user", "content": question + "again"})
		r = e.post(t, "/v1/chat/completions", map[string]string{proxy.HeaderSession: sid, proxy.HeaderBudget: budget}, map[string]any{"model": "gpt-4o", "messages": h})
		got, _ := e.svc.Get(t.Context(), "", sid)
		if r.status != c.status || c.status != 200 && got.LastSeq != sess.LastSeq {
			t.Errorf("%+v: %d %s, want %d; the log went from %d to %d entries", c.pin, r.status, r.body, c.status, sess.LastSeq, got.LastSeq)
		}
	}
}
