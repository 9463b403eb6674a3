package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/store"
)

func newHTTPServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// withLongTerm gives the server a recall index fed by every append and a
// facts memory, as `agentmem serve` does.
func withLongTerm(c *server.Config) {
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	c.Recall = ix
	c.Store = recall.NewIndexedStore(c.Store, &recall.Indexer{Index: ix, Store: c.Store})
	c.Facts = facts.New(facts.NewMemStore(), facts.Options{Clock: fixedClock})
}

// turn is a conversation turn with a tool call, as OpenAI messages.
func turn(i string) []agentmem.Message {
	call := "call_" + i
	return []agentmem.Message{
		{Role: agentmem.RoleUser, Content: agentmem.Text("question " + i + ": where is the staging database?")},
		{Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{{ID: call, Name: "search", Arguments: `{"q":"staging ` + i + `"}`}}},
		{Role: agentmem.RoleTool, ToolCallID: call, Content: agentmem.Text(strings.Repeat("staging runs on port 5433. ", 20))},
		{Role: agentmem.RoleAssistant, Content: agentmem.Text("It is on port 5433 (" + i + ").")},
	}
}

func TestSessionRoutes(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil, withLongTerm)
	s, err := c.Create(ctx, store.CreateRequest{ID: "s", UserID: "u1", Agent: "helper", Metadata: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{
		&agentmem.SystemPromptStep{StepInfo: agentmem.StepInfo{ID: "sys"}, Content: "You are helpful."},
		task("task", "Find the staging database."),
	}}); err != nil {
		t.Fatal(err)
	}
	// Messages: a whole turn per request; the key makes a retry store
	// nothing twice.
	var last int64
	for _, i := range []string{"1", "2", "3", "4"} {
		opts := client.AppendOptions{IdempotencyKey: "turn-" + i}
		r, err := c.AppendMessages(ctx, "s", turn(i), opts)
		if err != nil {
			t.Fatalf("AppendMessages %s: %v", i, err)
		}
		again, err := c.AppendMessages(ctx, "s", turn(i), opts)
		if err != nil || again.LastSeq != r.LastSeq || again.Seqs[0] != r.Seqs[0] {
			t.Fatalf("retry of turn %s: %+v, %v (first %+v)", i, again, err, r)
		}
		last = r.LastSeq
	}
	// Tool calls without results are kept pending, then flushed.
	pending := turn("5")[:2]
	r5, err := c.AppendMessages(ctx, "s", pending, client.AppendOptions{IfMatch: &last})
	if err != nil || len(r5.Seqs) != 2 {
		t.Fatalf("pending calls: %+v, %v", r5, err)
	}
	if cx, err := c.Context(ctx, "s", client.ContextOptions{}); err != nil || len(cx.Pending) != 1 || cx.Pending[0].Seq != r5.Seqs[1] {
		t.Fatalf("context with pending calls: %+v, %v", cx, err)
	}
	last = r5.LastSeq
	if r, err := c.AppendMessages(ctx, "s", nil, client.AppendOptions{FlushPending: true}); err == nil {
		t.Errorf("an empty append: %+v", r)
	}
	if r, err := c.AppendMessages(ctx, "s", turn("6")[:1], client.AppendOptions{FlushPending: true, IfMatch: &last}); err != nil || !slices.Equal(r.Updated, r5.Seqs[1:]) {
		t.Errorf("flushed: %+v, %v", r, err)
	} else {
		last = r.LastSeq
	}
	// Steps without IDs get them from the key: KEY/0, KEY/1, ...
	r, err := c.AppendSteps(ctx, "s", []agentmem.Step{&agentmem.FinalAnswerStep{Answer: "5433"}}, client.AppendOptions{IdempotencyKey: "final"})
	if err != nil || len(r.Seqs) != 1 {
		t.Fatalf("AppendSteps: %+v, %v", r, err)
	}
	rd, err := c.Read(ctx, store.ReadRequest{SessionID: "s", Last: 1})
	if err != nil || len(rd.Entries) != 1 || rd.Entries[0].Step.Info().ID != "final/0" || rd.Session.LastSeq != r.LastSeq || rd.Session.UserID != "u1" {
		t.Fatalf("Read last: %+v, %v (%+v, %+v)", rd, err, rd.Session, rd.Entries[0].Step)
	}

	// Context: the messages that fit, and what was left out.
	full, err := c.Context(ctx, "s", client.ContextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cx, err := c.Context(ctx, "s", client.ContextOptions{Budget: full.Tokens / 2, Format: render.NameOpenAI, Tokenizer: "o200k_base"})
	if err != nil {
		t.Fatal(err)
	}
	if cx.Tokens > full.Tokens/2 || cx.DroppedSteps == 0 || len(cx.Steps) == 0 || cx.LastSeq != r.LastSeq || cx.Tokenizer != "o200k_base" {
		t.Errorf("context at half budget: tokens %d (full %d), dropped %d, steps %v, last %d", cx.Tokens, full.Tokens, cx.DroppedSteps, cx.Steps, cx.LastSeq)
	}
	msgs, err := client.OpenAIMessages(cx)
	if err != nil || len(msgs) == 0 || msgs[0].Role != "system" {
		t.Errorf("OpenAI messages: %+v, %v", msgs, err)
	}
	an, err := c.Context(ctx, "s", client.ContextOptions{Format: render.NameAnthropic})
	if err != nil || !strings.Contains(string(an.Messages.(json.RawMessage)), `"system"`) {
		t.Errorf("anthropic context: %v", err)
	}
	// A budget below the pinned steps: 422 with the figures.
	_, err = c.Context(ctx, "s", client.ContextOptions{Budget: 3})
	var be *agentmem.BudgetError
	if !errors.Is(err, agentmem.ErrBudgetTooSmall) || !errors.As(err, &be) || be.Budget != 3 || be.Required <= 3 {
		t.Errorf("tiny budget: %v (%+v)", err, be)
	}

	// Compact: the working set shrinks; the log keeps everything.
	before, err := c.Read(ctx, store.ReadRequest{SessionID: "s", WorkingSet: true})
	if err != nil {
		t.Fatal(err)
	}
	comp, err := c.Compact(ctx, "s", client.CompactRequest{Strategy: api.StrategySummarize, KeepRecent: client.Int(2)})
	if err != nil || !comp.Changed || comp.Summary == "" || comp.After >= comp.Before || len(comp.Added) != 1 {
		t.Fatalf("Compact: %+v, %v", comp, err)
	}
	after, err := c.Read(ctx, store.ReadRequest{SessionID: "s", WorkingSet: true})
	if err != nil || len(after.Steps) != comp.After || len(after.Steps) >= len(before.Steps) || after.Session.LastSeq != comp.LastSeq {
		t.Fatalf("working set after Compact: %d steps (want %d), %v", len(after.Steps), comp.After, err)
	}
	if _, ok := after.Steps[len(after.Steps)-3].(*agentmem.SummaryStep); !ok {
		t.Errorf("no summary before the kept steps: %T", after.Steps[len(after.Steps)-3])
	}
	log, err := c.Read(ctx, store.ReadRequest{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	// Two compactions: the flush that answered the pending call, and the
	// summary.
	var comps int
	for _, en := range log.Entries {
		if en.Kind == store.CompactionEntry {
			comps++
			if en.Time.IsZero() || (en.Seq == comp.LastSeq && len(en.Compaction.Working) != comp.After) {
				t.Errorf("compaction entry %+v", en)
			}
		}
	}
	if comps != 2 || int64(len(log.Entries)) != comp.LastSeq {
		t.Errorf("log: %d entries, %d compactions, last seq %d", len(log.Entries), comps, comp.LastSeq)
	}
	// The bound memory of the store package loads the compacted working
	// set through the client.
	b, err := store.OpenMemory(ctx, c, "s", agentmem.Options{})
	if err != nil || len(b.Steps()) != comp.After {
		t.Fatalf("OpenMemory: %v", err)
	}

	// Fork: the server's semantics (the parent's user, agent, metadata).
	br, err := c.Fork(ctx, "s", client.ForkRequest{AtSeq: 2, ID: "s-branch"})
	if err != nil || br.ParentID != "s" || br.ForkSeq != 2 || br.UserID != "u1" || br.Agent != "helper" || br.Metadata["k"] != "v" || br.LastSeq != 2 {
		t.Fatalf("Fork: %+v, %v", br, err)
	}
	// Create with a parent: the store's (the retention is not inherited).
	br2, err := c.Create(ctx, store.CreateRequest{ID: "s-branch2", ParentID: "s", ForkSeq: 3, UserID: "u1"})
	if err != nil || br2.ForkSeq != 3 || br2.Retention != store.SessionRetention {
		t.Fatalf("Create of a branch: %+v, %v", br2, err)
	}
	if rb, err := c.Read(ctx, store.ReadRequest{SessionID: "s-branch"}); err != nil || len(rb.Entries) != 2 || rb.Entries[1].Step.Info().ID != "task" {
		t.Errorf("branch log: %+v, %v", rb, err)
	}
	if l, err := c.List(ctx, store.ListRequest{UserID: "u1", PageSize: 2}); err != nil || len(l.Sessions) != 2 || l.NextPageToken == "" || l.Sessions[0].ID != s.ID && l.Sessions[0].ParentID == "" {
		t.Errorf("List: %+v, %v", l, err)
	}
}

func TestReadPages(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil)
	if _, err := c.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	// More entries than one page of the read route.
	const n = api.DefaultReadLimit*2 + 17
	for start := 0; start < n; start += api.MaxStepsPerRequest {
		var steps []agentmem.Step
		for i := start; i < min(n, start+api.MaxStepsPerRequest); i++ {
			steps = append(steps, task(fmt.Sprintf("t%d", i), "x"))
		}
		if _, err := c.Append(ctx, store.AppendRequest{SessionID: "s", Steps: steps}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		req        store.ReadRequest
		first, cnt int64
	}{
		{store.ReadRequest{}, 1, n},
		{store.ReadRequest{After: 10}, 11, n - 10},
		{store.ReadRequest{After: 10, Limit: 1500}, 11, 1500},
		{store.ReadRequest{Last: 5}, n - 4, 5},
		{store.ReadRequest{Last: n - 3}, 4, n - 3},
		{store.ReadRequest{After: n}, 0, 0},
	} {
		tc.req.SessionID = "s"
		r, err := c.Read(ctx, tc.req)
		if err != nil {
			t.Fatalf("Read(%+v): %v", tc.req, err)
		}
		if int64(len(r.Entries)) != tc.cnt || (tc.cnt > 0 && r.Entries[0].Seq != tc.first) || r.Session.LastSeq != n {
			t.Errorf("Read(%+v): %d entries from %v, last %d", tc.req, len(r.Entries), r.Entries[:min(1, len(r.Entries))], r.Session.LastSeq)
		}
		for i, en := range r.Entries {
			if en.Seq != tc.first+int64(i) || en.Step.Info().Number != int(en.Seq) {
				t.Fatalf("Read(%+v): entry %d has seq %d", tc.req, i, en.Seq)
			}
		}
	}
	if ws, err := c.Read(ctx, store.ReadRequest{SessionID: "s", WorkingSet: true}); err != nil || len(ws.Steps) != n {
		t.Errorf("working set: %v", err)
	}
}

func TestRecallAndFacts(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil, withLongTerm)
	if _, err := c.Create(ctx, store.CreateRequest{ID: "s", UserID: "u1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendMessages(ctx, "s", []agentmem.Message{
		{Role: agentmem.RoleUser, Content: agentmem.Text("My dog Pixel hates thunderstorms")},
		{Role: agentmem.RoleAssistant, Content: agentmem.Text("Noted: Pixel and storms.")},
	}, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}

	// Recall: the turns of the tenant's sessions, and documents.
	ids, err := c.UpsertRecall(ctx,
		api.RecallDocument{ID: "note-1", Text: "The staging database is on port 5433", Metadata: map[string]string{"kind": "note"}},
		api.RecallDocument{Text: "Deploys happen on Tuesdays"})
	if err != nil || len(ids) != 2 || ids[0] != "note-1" || ids[1] == "" {
		t.Fatalf("UpsertRecall: %v, %v", ids, err)
	}
	hits, err := c.SearchRecall(ctx, client.RecallQuery{Text: "dog thunderstorms", K: 3, Scope: "session:s", After: 1, Fresh: true})
	if err != nil || len(hits) == 0 || hits[0].SessionID != "s" || hits[0].Step != 1 || !strings.Contains(hits[0].Text, "Pixel") {
		t.Fatalf("SearchRecall: %+v, %v", hits, err)
	}
	if hits, err := c.SearchRecall(ctx, client.RecallQuery{Text: "staging port"}); err != nil || len(hits) == 0 || hits[0].ID != "note-1" {
		t.Errorf("SearchRecall of a document: %+v, %v", hits, err)
	}
	if d, err := c.GetRecall(ctx, "note-1"); err != nil || d.Metadata["kind"] != "note" {
		t.Errorf("GetRecall: %+v, %v", d, err)
	}
	if err := c.DeleteRecall(ctx, "note-1"); err != nil {
		t.Errorf("DeleteRecall: %v", err)
	}
	if _, err := c.GetRecall(ctx, "note-1"); !errors.Is(err, agentmem.ErrNotFound) {
		t.Errorf("GetRecall of a deleted document: %v", err)
	}
	if _, err := c.SearchRecall(ctx, client.RecallQuery{Text: "x", Scope: "planet:earth"}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("bad scope: %v", err)
	}

	// Facts: remember, reinforce, search, get, forget.
	rem, err := c.Remember(ctx, "u1", api.RememberRequest{Text: "Prefers table-driven tests", Confidence: 0.8, Source: facts.Source{SessionID: "s"}})
	if err != nil || rem.Outcome != facts.OutcomeAdded || rem.Fact.ID == "" || rem.Fact.EffectiveConfidence <= 0 {
		t.Fatalf("Remember: %+v, %v", rem, err)
	}
	if again, err := c.Remember(ctx, "u1", api.RememberRequest{Text: "prefers table driven tests"}); err != nil || again.Outcome != facts.OutcomeReinforced || again.Fact.ID != rem.Fact.ID {
		t.Errorf("Remember again: %+v, %v", again, err)
	}
	fs, err := c.SearchFacts(ctx, "u1", client.FactsQuery{Text: "tests", K: 3})
	if err != nil || len(fs) != 1 || fs[0].ID != rem.Fact.ID || fs[0].Score == nil || fs[0].Reinforcements != 1 {
		t.Errorf("SearchFacts: %+v, %v", fs, err)
	}
	if all, err := c.SearchFacts(ctx, "u1", client.FactsQuery{}); err != nil || len(all) != 1 || all[0].Score != nil {
		t.Errorf("SearchFacts without a query: %+v, %v", all, err)
	}
	if got, err := c.GetFact(ctx, "u1", rem.Fact.ID); err != nil || got.Fact.Text != "Prefers table-driven tests" {
		t.Errorf("GetFact: %+v, %v", got, err)
	}
	if _, err := c.GetFact(ctx, "u2", rem.Fact.ID); !errors.Is(err, agentmem.ErrNotFound) {
		t.Errorf("GetFact of another user: %v", err)
	}
	if _, err := c.Remember(ctx, "u1", api.RememberRequest{Text: "x", Confidence: 7}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("Remember with confidence 7: %v", err)
	}
	// The context can carry the user's facts.
	cx, err := c.Context(ctx, "s", client.ContextOptions{Facts: 3, FactsQuery: "tests"})
	if err != nil || len(cx.Facts) != 1 {
		t.Errorf("Context with facts: %+v, %v", cx, err)
	}
	if err := c.Forget(ctx, "u1", rem.Fact.ID, "test"); err != nil {
		t.Errorf("Forget: %v", err)
	}
	if _, err := c.GetFact(ctx, "u1", rem.Fact.ID); !errors.Is(err, agentmem.ErrNotFound) {
		t.Errorf("GetFact of a forgotten fact: %v", err)
	}
	if err := c.Forget(ctx, "u1", rem.Fact.ID, ""); !errors.Is(err, agentmem.ErrNotFound) {
		t.Errorf("Forget twice: %v", err)
	}
}

func TestPop(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil)
	if _, err := c.Create(ctx, store.CreateRequest{ID: "p"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pop(ctx, "p", client.PopOptions{}); !errors.Is(err, store.ErrNothingToPop) || !errors.Is(err, agentmem.ErrConflict) {
		t.Fatalf("pop of an empty session: %v", err)
	}
	r, err := c.AppendMessages(ctx, "p", turn("1")[:3], client.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := r.LastSeq - 1
	_, err = c.Pop(ctx, "p", client.PopOptions{IfMatch: &stale})
	if e := apiErr(t, err); e.Status != 409 || e.LastSeq == nil || *e.LastSeq != r.LastSeq || !errors.Is(err, agentmem.ErrConflict) {
		t.Fatalf("a stale If-Match: %v", err)
	}
	p, err := c.Pop(ctx, "p", client.PopOptions{IfMatch: &r.LastSeq})
	if err != nil || p.Message.Role != "tool" || p.Message.ToolCallID != "call_1" || p.Removed || p.LastSeq != r.LastSeq+1 {
		t.Fatalf("pop: %+v, %v", p, err)
	}
	cx, err := c.Context(ctx, "p", client.ContextOptions{})
	if err != nil || len(cx.Pending) != 1 || !slices.Equal(cx.Pending[0].ToolCallIDs, []string{"call_1"}) {
		t.Fatalf("context after the pop: %+v, %v", cx, err)
	}
	if _, err := c.Pop(ctx, "missing", client.PopOptions{}); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("pop of a missing session: %v", err)
	}
}

func TestItems(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil)
	if _, err := c.Create(ctx, store.CreateRequest{ID: "it"}); err != nil {
		t.Fatal(err)
	}
	items := []json.RawMessage{
		json.RawMessage(`{"role":"user","content":"weather in Porto?"}`),
		json.RawMessage(`{"type":"reasoning","id":"rs_1","summary":[]}`),
		json.RawMessage(`{"type":"function_call","call_id":"c1","name":"weather","arguments":"{\"city\":\"Porto\"}"}`),
	}
	if _, err := c.AppendItems(ctx, "it", items, client.AppendOptions{IdempotencyKey: "k1"}); err != nil {
		t.Fatal(err)
	}
	// Sent again with its key, the request stores nothing twice.
	if _, err := c.AppendItems(ctx, "it", items, client.AppendOptions{IdempotencyKey: "k1"}); err != nil {
		t.Fatal(err)
	}
	// The output in a request of its own completes the pending call.
	out := json.RawMessage(`{"type":"function_call_output","call_id":"c1","output":"18°C"}`)
	if _, err := c.AppendItems(ctx, "it", []json.RawMessage{out}, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Items(ctx, "it", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(items), out)
	if len(got) != len(want) {
		t.Fatalf("items: %s", got)
	}
	for i := range want {
		var a, b any
		if json.Unmarshal(got[i], &a) != nil || json.Unmarshal(want[i], &b) != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("item %d: %s, want %s", i, got[i], want[i])
		}
	}
	if last, err := c.Items(ctx, "it", 2); err != nil || len(last) != 2 || !strings.Contains(string(last[1]), "function_call_output") {
		t.Errorf("the newest 2: %s, %v", last, err)
	}
	popped, err := c.PopItem(ctx, "it", client.PopOptions{})
	if err != nil || !strings.Contains(string(popped), `"18°C"`) {
		t.Fatalf("pop: %s, %v", popped, err)
	}
	cx, err := c.Context(ctx, "it", client.ContextOptions{})
	if err != nil || len(cx.Pending) != 1 {
		t.Fatalf("after popping the output the call is pending again: %+v, %v", cx, err)
	}
	if err := c.ClearItems(ctx, "it", client.PopOptions{}); err != nil {
		t.Fatal(err)
	}
	if left, err := c.Items(ctx, "it", 0); err != nil || len(left) != 0 {
		t.Errorf("after clear: %s, %v", left, err)
	}
	if _, err := c.PopItem(ctx, "it", client.PopOptions{}); !errors.Is(err, store.ErrNothingToPop) {
		t.Errorf("pop of a cleared session: %v", err)
	}
	if _, err := c.AppendItems(ctx, "it", []json.RawMessage{json.RawMessage(`{"type":"function_call_output","call_id":"nobody","output":"x"}`)}, client.AppendOptions{}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("an output of an unknown call: %v", err)
	}
	if _, err := c.Items(ctx, "missing", 0); !errors.Is(err, agentmem.ErrNotFound) {
		t.Errorf("items of a missing session: %v", err)
	}
}

// TestSessionSettings: Create and Fork send a session's settings and
// return them as the server stores them (a fork without them takes its
// parent's).
func TestSessionSettings(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil)
	s, err := c.Create(ctx, store.CreateRequest{ID: "chat", Pinning: &agentmem.ChatPinning, AutoCompact: &store.AutoCompact{MaxTokens: 4000}})
	want := store.AutoCompact{MaxTokens: 4000, TargetTokens: 2000, KeepRecent: agentmem.DefaultKeepRecent, Summarizer: store.SummarizerExtractive}
	if err != nil || *s.Pinning != agentmem.ChatPinning || *s.AutoCompact != want {
		t.Fatalf("Create: %+v, %v", s, err)
	}
	if _, err := c.AppendMessages(ctx, "chat", []agentmem.Message{{Role: agentmem.RoleUser, Content: agentmem.Text("hi")}}, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	br, err := c.Fork(ctx, "chat", client.ForkRequest{ID: "b"})
	if err != nil || *br.Pinning != agentmem.ChatPinning || *br.AutoCompact != want {
		t.Fatalf("Fork: %+v, %v", br, err)
	}
	br, err = c.Fork(ctx, "chat", client.ForkRequest{ID: "b2", Pinning: &agentmem.Pinning{FirstTask: true}})
	if err != nil || *br.Pinning != (agentmem.Pinning{FirstTask: true}) || *br.AutoCompact != want {
		t.Fatalf("Fork with a pinning: %+v, %v", br, err)
	}
	if got, err := c.Get(ctx, "", "b2"); err != nil || *got.Pinning != *br.Pinning {
		t.Fatalf("Get: %+v, %v", got, err)
	}
	_, err = c.Create(ctx, store.CreateRequest{ID: "bad", AutoCompact: &store.AutoCompact{MaxTokens: 10, TargetTokens: 20}})
	var inv *agentmem.InvalidError
	if !errors.As(err, &inv) || inv.Field != "auto_compact.target_tokens" {
		t.Fatalf("bad settings: %v", err)
	}
}
