package mcp_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/mcp"
)

// Every tool of a server with long-term memory, with its required
// arguments: the tools a model is shown must each carry a description to
// act on and a strict schema with bounds.
func TestLongTermToolsListed(t *testing.T) {
	e := newLongTerm(t).env(t, "acme")
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		mcp.ToolCreateSession: nil,
		mcp.ToolListSessions:  nil,
		mcp.ToolAppend:        {"session_id", "messages"},
		mcp.ToolGetContext:    {"session_id"},
		mcp.ToolPop:           {"session_id"},
		mcp.ToolRemember:      {"user_id", "text"},
		mcp.ToolRecallFacts:   {"user_id"},
		mcp.ToolForget:        {"user_id", "fact_id", "reason"},
		mcp.ToolExtractFacts:  {"user_id", "messages"},
		mcp.ToolSearchMemory:  {"query"},
		mcp.ToolMemoryList:    {"session_id"},
		mcp.ToolMemoryAppend:  {"session_id", "label", "text"},
		mcp.ToolMemoryReplace: {"session_id", "label", "old", "new"},
		mcp.ToolMemoryRethink: {"session_id", "label", "value"},
	}
	checkTools(t, res.Tools, want)

	rem := toolSchema(t, res.Tools, mcp.ToolRemember)
	if c := prop(rem, "confidence"); c["minimum"] != 0.0 || c["maximum"] != 1.0 {
		t.Errorf("remember confidence: %v", c)
	}
	if tx := prop(rem, "text"); tx["minLength"] != 1.0 || tx["maxLength"] != float64(facts.MaxTextBytes) {
		t.Errorf("remember text: %v", tx)
	}
	if m := prop(rem, "metadata"); m["maxProperties"] != float64(facts.MaxMetadataKeys) {
		t.Errorf("remember metadata: %v", m)
	}
	if k := prop(toolSchema(t, res.Tools, mcp.ToolRecallFacts), "k"); k["minimum"] != 1.0 || k["maximum"] != float64(mcp.MaxFactsK) || k["default"] != float64(mcp.DefaultFactsK) {
		t.Errorf("recall_facts k: %v", k)
	}
	search := toolSchema(t, res.Tools, mcp.ToolSearchMemory)
	if k := prop(search, "k"); k["maximum"] != float64(mcp.MaxSearchK) || k["default"] != float64(mcp.DefaultSearchK) {
		t.Errorf("search_memory k: %v", k)
	}
	if b := prop(search, "before"); b["minimum"] != 0.0 || b["maximum"] != float64(mcp.MaxWindow) {
		t.Errorf("search_memory before: %v", b)
	}
	if s := prop(search, "session_id"); s["pattern"] == nil {
		t.Errorf("search_memory session_id: %v", s)
	}
	if ins := e.cs.InitializeResult().Instructions; !strings.Contains(ins, "remember") || !strings.Contains(ins, "search_memory") {
		t.Errorf("instructions do not mention the long-term tools: %q", ins)
	}

	// Without Facts and Recall, their tools are not offered at all.
	plain := newEnv(t, "acme")
	res, err = plain.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if slices.Contains([]string{mcp.ToolRemember, mcp.ToolRecallFacts, mcp.ToolForget, mcp.ToolExtractFacts, mcp.ToolSearchMemory, mcp.ToolMemoryList, mcp.ToolMemoryAppend}, tool.Name) {
			t.Errorf("a server without long-term memory lists %s", tool.Name)
		}
	}
	if ins := plain.cs.InitializeResult().Instructions; strings.Contains(ins, "remember") || strings.Contains(ins, "search_memory") {
		t.Errorf("instructions name tools the server does not have: %q", ins)
	}
}

func TestRemember(t *testing.T) {
	lt := newLongTerm(t)
	e := lt.env(t, "acme")
	var added mcp.RememberOutput
	call(t, e.cs, mcp.ToolRemember, map[string]any{"user_id": "alice", "text": "  Prefers metric units. ", "metadata": map[string]string{"topic": "units"}}, &added)
	f := added.Fact
	if added.Outcome != "added" || f.ID == "" || f.UserID != "alice" || f.Text != "Prefers metric units." ||
		f.Confidence != facts.DefaultConfidence || f.BaseConfidence != facts.DefaultConfidence || !f.CreatedAt.Equal(t0) ||
		f.Agent != "mcp:test" || f.SessionID != "" || f.Metadata["topic"] != "units" {
		t.Fatalf("remember: %+v", added)
	}

	// Saying it again, in other words, reinforces it.
	lt.clock.Advance(24 * time.Hour)
	var again mcp.RememberOutput
	call(t, e.cs, mcp.ToolRemember, map[string]any{"user_id": "alice", "text": "prefers metric units"}, &again)
	if again.Outcome != "reinforced" || again.Fact.ID != f.ID || again.Fact.Reinforcements != 1 || again.Fact.Confidence <= f.Confidence {
		t.Fatalf("reinforce: %+v", again)
	}

	// From a session: the source is the session, at its last step, and
	// its agent; the same fact at the same point of it is a replay.
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "chat", "user_id": "alice", "agent": "planner"}, nil)
	call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "chat", "messages": turn}, nil)
	var sourced, replay mcp.RememberOutput
	args := map[string]any{"user_id": "alice", "text": "Is allergic to peanuts.", "confidence": 0.95, "session_id": "chat"}
	call(t, e.cs, mcp.ToolRemember, args, &sourced)
	call(t, e.cs, mcp.ToolRemember, args, &replay)
	if sourced.Outcome != "added" || sourced.Fact.SessionID != "chat" || sourced.Fact.Agent != "planner" || sourced.Fact.BaseConfidence != 0.95 {
		t.Errorf("from a session: %+v", sourced)
	}
	if replay.Outcome != "ignored" || replay.Fact.ID != sourced.Fact.ID || replay.Fact.Reinforcements != 0 {
		t.Errorf("replayed: %+v", replay)
	}
	stored, err := lt.facts.Get(context.Background(), "acme", sourced.Fact.ID)
	if err != nil || stored.Source.StepSeq != 4 || stored.Tenant != "acme" {
		t.Errorf("stored %+v, %v", stored, err)
	}

	bad := func(args map[string]any, want ...string) {
		t.Helper()
		callErr(t, e.cs, mcp.ToolRemember, args, want...)
	}
	bad(map[string]any{"text": "x"}, "user_id")
	bad(map[string]any{"user_id": "", "text": "x"}, "user_id")
	bad(map[string]any{"user_id": strings.Repeat("u", facts.MaxFieldBytes+1), "text": "x"}, "user_id")
	bad(map[string]any{"user_id": "alice"}, "text")
	bad(map[string]any{"user_id": "alice", "text": "   "}, "text", "empty")
	bad(map[string]any{"user_id": "alice", "text": strings.Repeat("x", facts.MaxTextBytes+1)}, "text")
	bad(map[string]any{"user_id": "alice", "text": "a\x00b"}, "text", "NUL")
	bad(map[string]any{"user_id": "alice", "text": "x", "confidence": 1.5}, "confidence")
	bad(map[string]any{"user_id": "alice", "text": "x", "confidence": -0.1}, "confidence")
	bad(map[string]any{"user_id": "alice", "text": "x", "session_id": "ghost"}, `session "ghost" does not exist`)
	bad(map[string]any{"user_id": "alice", "text": "x", "session_id": ".."}, "session_id")
	bad(map[string]any{"user_id": "alice", "text": "x", "metadata": manyLabels(facts.MaxMetadataKeys + 1)}, "metadata")
	bad(map[string]any{"user_id": "alice", "text": "x", "metadata": map[string]string{"": "v"}}, "metadata")
	bad(map[string]any{"user_id": "alice", "text": "x", "fact": "y"}, "fact")
	bad(map[string]any{"user_id": 7, "text": "x"}, "user_id")
	if fs, _ := lt.facts.List(context.Background(), "acme", "alice", true); len(fs) != 2 {
		t.Errorf("alice has %d facts; refused calls must store nothing", len(fs))
	}
}

func manyLabels(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("k%d", i)] = "v"
	}
	return m
}

func TestRecallFacts(t *testing.T) {
	lt := newLongTerm(t)
	e := lt.env(t, "")
	for _, f := range []struct {
		text string
		conf float64
	}{
		{"Lives in Lisbon with two cats.", 0.9},
		{"Prefers answers in French.", 0.6},
		{"Drinks coffee every morning.", 0.8},
		{"Works as a nurse on night shifts.", 0.5},
	} {
		call(t, e.cs, mcp.ToolRemember, map[string]any{"user_id": "alice", "text": f.text, "confidence": f.conf}, nil)
	}
	call(t, e.cs, mcp.ToolRemember, map[string]any{"user_id": "bob", "text": "Lives in Oslo."}, nil)

	var got mcp.RecallFactsOutput
	call(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice", "query": "where does she live?"}, &got)
	if len(got.Facts) != 1 || got.Facts[0].Text != "Lives in Lisbon with two cats." || got.Facts[0].UserID != "alice" ||
		got.Facts[0].Confidence != 0.9 || got.Facts[0].Relevance <= 0 || got.Facts[0].Score != got.Facts[0].Relevance*got.Facts[0].Confidence {
		t.Fatalf("query: %+v", got)
	}

	// Without a query: the most confident first, k of them.
	var top mcp.RecallFactsOutput
	call(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice", "k": 2}, &top)
	if len(top.Facts) != 2 || top.Facts[0].Confidence != 0.9 || top.Facts[1].Confidence != 0.8 {
		t.Fatalf("top 2: %+v", top)
	}
	var all mcp.RecallFactsOutput
	call(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice"}, &all)
	if len(all.Facts) != 4 {
		t.Fatalf("all: %d facts", len(all.Facts))
	}

	// Confidence decays while a fact is not seen again.
	lt.clock.Advance(facts.DefaultHalfLife)
	var later mcp.RecallFactsOutput
	call(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice", "query": "coffee"}, &later)
	want := facts.DefaultFloor + (0.8-facts.DefaultFloor)/2
	if len(later.Facts) != 1 || later.Facts[0].BaseConfidence != 0.8 || diff(later.Facts[0].Confidence, want) > 1e-9 {
		t.Fatalf("after a half-life: %+v, want confidence %v", later, want)
	}

	var none mcp.RecallFactsOutput
	call(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "carol"}, &none)
	if none.Facts == nil || len(none.Facts) != 0 {
		t.Errorf("no facts must be an empty list: %+v", none)
	}
	callErr(t, e.cs, mcp.ToolRecallFacts, map[string]any{}, "user_id")
	callErr(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice", "k": 0}, "k")
	callErr(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice", "k": mcp.MaxFactsK + 1}, "k")
	callErr(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice", "query": strings.Repeat("q", mcp.MaxQueryBytes+1)}, "query")
	callErr(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice", "query": 3}, "query")
}

func diff(a, b float64) float64 {
	if a > b {
		return a - b
	}
	return b - a
}

func TestForget(t *testing.T) {
	lt := newLongTerm(t)
	e := lt.env(t, "acme")
	var a, b mcp.RememberOutput
	call(t, e.cs, mcp.ToolRemember, map[string]any{"user_id": "alice", "text": "Has a dog named Rex."}, &a)
	call(t, e.cs, mcp.ToolRemember, map[string]any{"user_id": "bob", "text": "Has a cat named Tom."}, &b)

	// Another user's fact is not alice's to forget.
	callErr(t, e.cs, mcp.ToolForget, map[string]any{"user_id": "alice", "fact_id": b.Fact.ID, "reason": "x"}, "not found", "recall_facts")
	if _, err := lt.facts.Get(context.Background(), "acme", b.Fact.ID); err != nil {
		t.Fatalf("bob's fact is gone: %v", err)
	}

	var out mcp.ForgetOutput
	call(t, e.cs, mcp.ToolForget, map[string]any{"user_id": "alice", "fact_id": a.Fact.ID, "reason": "the user asked"}, &out)
	if out.FactID != a.Fact.ID || out.Text != "Has a dog named Rex." {
		t.Errorf("forget: %+v", out)
	}
	var left mcp.RecallFactsOutput
	call(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice", "query": "dog"}, &left)
	if len(left.Facts) != 0 {
		t.Errorf("recalled after forget: %+v", left)
	}
	audit, err := lt.facts.Audit(context.Background(), "acme", "alice")
	if n := len(audit); err != nil || n != 2 || audit[n-1].Action != facts.ActionForgotten || audit[n-1].By != "mcp:test" ||
		audit[n-1].Reason != "the user asked" || audit[n-1].FactID != a.Fact.ID {
		t.Errorf("audit %+v, %v", audit, err)
	}
	callErr(t, e.cs, mcp.ToolForget, map[string]any{"user_id": "alice", "fact_id": a.Fact.ID, "reason": "again"}, "not found")

	bad := func(args map[string]any, want ...string) {
		t.Helper()
		callErr(t, e.cs, mcp.ToolForget, args, want...)
	}
	bad(map[string]any{"user_id": "bob", "fact_id": b.Fact.ID}, "reason")
	bad(map[string]any{"user_id": "bob", "fact_id": b.Fact.ID, "reason": "  "}, "reason", "empty")
	bad(map[string]any{"user_id": "bob", "fact_id": b.Fact.ID, "reason": strings.Repeat("r", facts.MaxReasonBytes+1)}, "reason")
	bad(map[string]any{"user_id": "bob", "reason": "x"}, "fact_id")
	bad(map[string]any{"user_id": "bob", "fact_id": "a\nb", "reason": "x"}, "fact_id")
	bad(map[string]any{"user_id": "bob", "fact_id": strings.Repeat("f", facts.MaxFieldBytes+1), "reason": "x"}, "fact_id")
	bad(map[string]any{"fact_id": b.Fact.ID, "reason": "x"}, "user_id")
	bad(map[string]any{"user_id": "bob", "fact_id": "no-such-fact", "reason": "x"}, `user "bob" has no fact "no-such-fact"`)
	if _, err := lt.facts.Get(context.Background(), "acme", b.Fact.ID); err != nil {
		t.Errorf("refused forgets deleted bob's fact: %v", err)
	}
}

// A tool acting for one tenant never sees, reinforces or forgets the
// facts of another, even knowing their IDs.
func TestFactsTenantsAreIsolated(t *testing.T) {
	lt := newLongTerm(t)
	acme, globex, anon := lt.env(t, "acme"), lt.env(t, "globex"), lt.env(t, "")
	var secret mcp.RememberOutput
	call(t, acme.cs, mcp.ToolRemember, map[string]any{"user_id": "alice", "text": "Is planning a surprise party for Bob."}, &secret)

	for _, e := range []*env{globex, anon} {
		var got mcp.RecallFactsOutput
		call(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice"}, &got)
		call(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice", "query": "surprise party"}, &got)
		if len(got.Facts) != 0 {
			t.Errorf("tenant %q recalls acme's facts: %+v", e.tenant, got)
		}
		callErr(t, e.cs, mcp.ToolForget, map[string]any{"user_id": "alice", "fact_id": secret.Fact.ID, "reason": "probe"}, "not found")
		// The same text for the same user name is a fact of its own.
		var own mcp.RememberOutput
		call(t, e.cs, mcp.ToolRemember, map[string]any{"user_id": "alice", "text": "Is planning a surprise party for Bob."}, &own)
		if own.Outcome != "added" || own.Fact.ID == secret.Fact.ID {
			t.Errorf("tenant %q: %+v", e.tenant, own)
		}
	}
	f, err := lt.facts.Get(context.Background(), "acme", secret.Fact.ID)
	if err != nil || f.Reinforcements != 0 {
		t.Errorf("acme's fact after the probes: %+v, %v", f, err)
	}
	if audit, _ := lt.facts.Audit(context.Background(), "acme", "alice"); len(audit) != 1 || audit[0].Action != facts.ActionAdded {
		t.Errorf("acme's audit log: %+v", audit)
	}
}

func TestLongTermFailureIsAToolError(t *testing.T) {
	lt := newLongTerm(t)
	e := lt.env(t, "")
	call(t, e.cs, mcp.ToolRemember, map[string]any{"user_id": "alice", "text": "Likes tea."}, nil)
	lt.facts.Store().Close()
	lt.ix.Close()
	for tool, args := range map[string]map[string]any{
		mcp.ToolRemember:     {"user_id": "alice", "text": "Likes jam."},
		mcp.ToolRecallFacts:  {"user_id": "alice"},
		mcp.ToolForget:       {"user_id": "alice", "fact_id": "x", "reason": "y"},
		mcp.ToolSearchMemory: {"query": "tea"},
	} {
		msg := callErr(t, e.cs, tool, args, "unavailable", "try again")
		if strings.Contains(msg, "closed") {
			t.Errorf("%s: internals leak into the tool error: %q", tool, msg)
		}
	}
	if logs := e.logs.String(); !strings.Contains(logs, "closed") || !strings.Contains(logs, "mcp tool failed") {
		t.Errorf("the failures are not logged: %s", logs)
	}
}

// TestGetContextWithFacts: get_context with facts=K adds the session
// user's facts to the system prompt, as the HTTP API's context route
// does, and names them; a session without a user is refused.
func TestGetContextWithFacts(t *testing.T) {
	e := newLongTerm(t).env(t, "acme")
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "trip", "user_id": "alice"}, nil)
	call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "trip", "messages": []map[string]any{
		{"role": "system", "content": "You plan trips."},
		{"role": "user", "content": "Book me a way to Lyon."},
	}}, nil)
	var rem struct {
		Fact struct {
			ID string `json:"id"`
		} `json:"fact"`
	}
	call(t, e.cs, mcp.ToolRemember, map[string]any{"user_id": "alice", "text": "Alice prefers trains to planes"}, &rem)
	var c mcp.ContextOutput
	call(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "trip", "budget": 2000, "facts": 3}, &c)
	if !slices.Equal(c.Facts, []string{rem.Fact.ID}) || !strings.Contains(fmt.Sprint(c.Messages), "Alice prefers trains") {
		t.Errorf("facts %v, messages %v", c.Facts, c.Messages)
	}
	var plain mcp.ContextOutput
	call(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "trip", "budget": 2000}, &plain)
	if plain.Facts != nil || strings.Contains(fmt.Sprint(plain.Messages), "Alice prefers trains") || plain.Tokens >= c.Tokens {
		t.Errorf("without facts: %v, %d tokens (with: %d)", plain.Facts, plain.Tokens, c.Tokens)
	}
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "anon"}, nil)
	call(t, e.cs, mcp.ToolAppend, map[string]any{"session_id": "anon", "messages": []map[string]any{{"role": "user", "content": "hi"}}}, nil)
	callErr(t, e.cs, mcp.ToolGetContext, map[string]any{"session_id": "anon", "facts": 2}, "no user_id")
}

// remember takes when a fact held; recall_facts answers as of a time and
// filters on metadata.
func TestFactsInTime(t *testing.T) {
	lt := newLongTerm(t)
	e := lt.env(t, "acme")
	var berlin mcp.RememberOutput
	call(t, e.cs, mcp.ToolRemember, map[string]any{"user_id": "alice", "text": "Lives in Berlin.", "valid_from": "2020-05-01T00:00:00Z",
		"valid_to": "2025-06-01T00:00:00Z", "metadata": map[string]string{"topic": "home"}}, &berlin)
	if berlin.Fact.ValidFrom.Format(time.RFC3339) != "2020-05-01T00:00:00Z" || berlin.Fact.ValidTo == nil || berlin.Fact.ValidTo.Format(time.RFC3339) != "2025-06-01T00:00:00Z" {
		t.Fatalf("remember with validity: %+v", berlin.Fact)
	}
	var tea mcp.RememberOutput
	call(t, e.cs, mcp.ToolRemember, map[string]any{"user_id": "alice", "text": "Drinks tea.", "metadata": map[string]string{"topic": "food"}}, &tea)
	if !tea.Fact.ValidFrom.Equal(t0) || tea.Fact.ValidTo != nil {
		t.Fatalf("default validity: %+v", tea.Fact)
	}
	ids := func(out mcp.RecallFactsOutput) []string {
		var s []string
		for _, f := range out.Facts {
			s = append(s, f.ID)
		}
		return s
	}
	var now, then, food mcp.RecallFactsOutput
	call(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice"}, &now)
	call(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice", "as_of": "2024-01-01T00:00:00Z"}, &then)
	call(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice", "metadata": map[string]string{"topic": "food"}}, &food)
	if got := ids(now); !slices.Equal(got, []string{tea.Fact.ID}) {
		t.Errorf("now: %v, want only the tea (Berlin ended)", got)
	}
	if got := ids(then); !slices.Equal(got, []string{berlin.Fact.ID}) {
		t.Errorf("as of 2024: %v, want Berlin", got)
	}
	if got := ids(food); !slices.Equal(got, []string{tea.Fact.ID}) {
		t.Errorf("topic food: %v", got)
	}
	callErr(t, e.cs, mcp.ToolRemember, map[string]any{"user_id": "alice", "text": "x", "valid_from": "yesterday"}, "valid_from")
	callErr(t, e.cs, mcp.ToolRemember, map[string]any{"user_id": "alice", "text": "x", "valid_from": "2026-01-01T00:00:00Z", "valid_to": "2025-01-01T00:00:00Z"}, "valid_to")
	callErr(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice", "as_of": "soon"}, "as_of")
	callErr(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice", "metadata": manyLabels(facts.MaxMetadataFilters + 1)}, "metadata")
}

// TestExtractFacts: extract_facts has the server's extractor learn from a
// turn: an add, then a supersede of what the user said before, each with
// the fact as now remembered, the session as its source; a turn that
// teaches nothing decides nothing; the extractor's failure is a tool
// error that writes nothing. A server with facts but no extractor does
// not offer the tool.
func TestExtractFacts(t *testing.T) {
	lt := newLongTerm(t)
	e := lt.env(t, "acme")
	call(t, e.cs, mcp.ToolCreateSession, map[string]any{"id": "chat", "user_id": "alice", "agent": "concierge"}, nil)
	turn := func(text string) []map[string]any {
		return []map[string]any{{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}}
	}
	var first mcp.ExtractFactsOutput
	call(t, e.cs, mcp.ToolExtractFacts, map[string]any{"user_id": "alice", "session_id": "chat", "messages": turn("Hi, I live in Berlin.")}, &first)
	if len(first.Decisions) != 1 {
		t.Fatalf("decisions %+v", first.Decisions)
	}
	add := first.Decisions[0]
	if add.Action != "add" || add.Outcome != "added" || add.Fact == nil || add.Fact.Text != "Lives in Berlin." ||
		add.Fact.SessionID != "chat" || add.Fact.Agent != "concierge" || add.Previous != nil {
		t.Fatalf("add: %+v", add)
	}
	var second mcp.ExtractFactsOutput
	call(t, e.cs, mcp.ToolExtractFacts, map[string]any{"user_id": "alice", "messages": turn("I live in Paris now.")}, &second)
	if len(second.Decisions) != 1 {
		t.Fatalf("decisions %+v", second.Decisions)
	}
	sup := second.Decisions[0]
	if sup.Action != "supersede" || sup.Outcome != "superseded" || sup.Fact == nil || sup.Fact.Text != "Lives in Paris." ||
		sup.Previous == nil || sup.Previous.ID != add.Fact.ID || sup.Previous.ValidTo == nil {
		t.Fatalf("supersede: %+v", sup)
	}
	var none mcp.ExtractFactsOutput
	call(t, e.cs, mcp.ToolExtractFacts, map[string]any{"user_id": "alice", "messages": turn("What time is it?")}, &none)
	if none.Decisions == nil || len(none.Decisions) != 0 {
		t.Fatalf("a turn that teaches nothing: %+v", none.Decisions)
	}
	var rec mcp.RecallFactsOutput
	call(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice"}, &rec)
	if len(rec.Facts) != 1 || rec.Facts[0].Text != "Lives in Paris." {
		t.Fatalf("alice's facts: %+v", rec.Facts)
	}

	lt.extractor.down.Store(true)
	callErr(t, e.cs, mcp.ToolExtractFacts, map[string]any{"user_id": "bob", "messages": turn("I live in Rome.")}, "extract_facts failed", "overloaded", "nothing was written")
	lt.extractor.down.Store(false)
	call(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "bob"}, &rec)
	if len(rec.Facts) != 0 {
		t.Fatalf("bob's facts after a failed extraction: %+v", rec.Facts)
	}
	for _, bad := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"user_id": "alice", "messages": []any{}}, "messages"},
		{map[string]any{"user_id": "alice", "messages": []map[string]any{{"role": "tool", "content": "x"}}}, "role"},
		{map[string]any{"user_id": "alice", "messages": []map[string]any{{"role": "user", "content": " "}}}, "content"},
		{map[string]any{"user_id": "alice", "messages": turn("I live in Oslo."), "session_id": "nope"}, "nope"},
		{map[string]any{"user_id": "", "messages": turn("I live in Oslo.")}, "user_id"},
	} {
		callErr(t, e.cs, mcp.ToolExtractFacts, bad.args, bad.want)
	}
	call(t, e.cs, mcp.ToolRecallFacts, map[string]any{"user_id": "alice"}, &rec)
	if len(rec.Facts) != 1 || rec.Facts[0].Text != "Lives in Paris." {
		t.Fatalf("alice's facts after refused calls: %+v", rec.Facts)
	}

	noModel := newEnvWith(t, mcp.Config{Store: lt.st, Tenant: "acme", Facts: lt.facts})
	res, err := noModel.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == mcp.ToolExtractFacts {
			t.Error("a server without an extractor lists extract_facts")
		}
	}
	if ins := noModel.cs.InitializeResult().Instructions; strings.Contains(ins, "extract_facts") {
		t.Errorf("instructions name extract_facts without an extractor: %q", ins)
	}
	if ins := e.cs.InitializeResult().Instructions; !strings.Contains(ins, "extract_facts") {
		t.Errorf("instructions do not name extract_facts: %q", ins)
	}
}
