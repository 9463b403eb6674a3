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
	"github.com/agentmem/agentmem/client/remote"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/internal/apiconv"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/views/recallview"
)

func newHTTPServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// withLongTerm gives the server a recall index that follows its store's
// log (newTestServer runs the follower) and a facts memory, as `agentmem
// serve` does.
func withLongTerm(c *server.Config) {
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	c.Recall = ix
	mem := c.Store
	c.RecallFollower = recallview.NewFollower(mem, mem, &recallview.Indexer{Index: ix, Store: mem}, recallview.FollowerOptions{})
	c.Facts = facts.New(facts.NewMemStore(), facts.Options{Clock: fixedClock})
}

// turn is a conversation turn with a tool call, as OpenAI messages.
func turn(i string) []api.OpenAIMessage {
	call := "call_" + i
	return apiconv.OpenAIMessages([]agentmem.Message{
		{Role: agentmem.RoleUser, Content: agentmem.Text("question " + i + ": where is the staging database?")},
		{Role: agentmem.RoleAssistant, ToolCalls: []agentmem.ToolCall{{ID: call, Name: "search", Arguments: `{"q":"staging ` + i + `"}`}}},
		{Role: agentmem.RoleTool, ToolCallID: call, Content: agentmem.Text(strings.Repeat("staging runs on port 5433. ", 20))},
		{Role: agentmem.RoleAssistant, Content: agentmem.Text("It is on port 5433 (" + i + ").")},
	})
}

// steps encodes typed steps in the step JSON.
func steps(t *testing.T, ss ...agentmem.Step) []json.RawMessage {
	t.Helper()
	raw, err := apiconv.Steps(ss)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// readLog reads a session's whole log as store entries.
func readLog(t *testing.T, c *client.Client, id string) (*api.ReadStepsResponse, []store.Entry) {
	t.Helper()
	page, err := c.ReadLog(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	es, err := apiconv.EntriesFromAPI(page)
	if err != nil {
		t.Fatal(err)
	}
	return page, es
}

func TestSessionRoutes(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil, withLongTerm)
	s, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "s", UserID: "u1", Agent: "helper", Metadata: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendSteps(ctx, "s", steps(t,
		&agentmem.SystemPromptStep{StepInfo: agentmem.StepInfo{ID: "sys"}, Content: "You are helpful."},
		task("task", "Find the staging database."),
	), client.AppendOptions{}); err != nil {
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
	r, err := c.AppendSteps(ctx, "s", steps(t, &agentmem.FinalAnswerStep{Answer: "5433"}), client.AppendOptions{IdempotencyKey: "final"})
	if err != nil || len(r.Seqs) != 1 {
		t.Fatalf("AppendSteps: %+v, %v", r, err)
	}
	rd, err := c.ReadSteps(ctx, "s", client.ReadQuery{Last: 1})
	if err != nil || len(rd.Steps) != 1 || rd.LastSeq != r.LastSeq {
		t.Fatalf("ReadSteps last: %+v, %v", rd, err)
	}
	var h api.StepHeader
	if err := json.Unmarshal(rd.Steps[0], &h); err != nil || h.ID != "final/0" || h.Type != "final_answer" || h.Number != r.Seqs[0] {
		t.Fatalf("the last step: %s (%+v, %v)", rd.Steps[0], h, err)
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
	if e := apiErr(t, err); !errors.Is(err, client.ErrBudgetTooSmall) || e.Budget != 3 || e.Required <= 3 {
		t.Errorf("tiny budget: %v (%+v)", err, e)
	}

	// Compact: the working set shrinks; the log keeps everything.
	_, es := readLog(t, c, "s")
	before := store.WorkingSet(es)
	comp, err := c.Compact(ctx, "s", client.CompactRequest{Strategy: api.StrategySummarize, KeepRecent: client.Int(2)})
	if err != nil || !comp.Changed || comp.Summary == "" || comp.After >= comp.Before || len(comp.Added) != 1 {
		t.Fatalf("Compact: %+v, %v", comp, err)
	}
	log, es := readLog(t, c, "s")
	after := store.WorkingSet(es)
	if len(after) != comp.After || len(after) >= len(before) || log.LastSeq != comp.LastSeq {
		t.Fatalf("working set after Compact: %d steps (want %d)", len(after), comp.After)
	}
	if _, ok := after[len(after)-3].(*agentmem.SummaryStep); !ok {
		t.Errorf("no summary before the kept steps: %T", after[len(after)-3])
	}
	// Two compactions: the flush that answered the pending call, and the
	// summary.
	var comps int
	for _, en := range es {
		if en.Kind == store.CompactionEntry {
			comps++
			if en.Time.IsZero() || (en.Seq == comp.LastSeq && len(en.Compaction.Working) != comp.After) {
				t.Errorf("compaction entry %+v", en)
			}
		}
	}
	if comps != 2 || len(log.Compactions) != 2 || int64(len(es)) != comp.LastSeq {
		t.Errorf("log: %d entries, %d compactions, last seq %d", len(es), comps, comp.LastSeq)
	}
	// The bound memory of the store package loads the compacted working
	// set through the client's store adapter.
	b, err := store.OpenMemory(ctx, remote.New(c), "s", agentmem.Options{})
	if err != nil || len(b.Steps()) != comp.After {
		t.Fatalf("OpenMemory: %v", err)
	}

	// Fork: the server's semantics (the parent's user, agent, metadata).
	br, err := c.Fork(ctx, "s", api.ForkRequest{AtSeq: 2, ID: "s-branch"})
	if err != nil || br.ParentID != "s" || br.ForkSeq != 2 || br.UserID != "u1" || br.Agent != "helper" || br.Metadata["k"] != "v" || br.LastSeq != 2 {
		t.Fatalf("Fork: %+v, %v", br, err)
	}
	if _, err := c.Fork(ctx, "s", api.ForkRequest{AtSeq: 3, ID: "s-branch2"}); err != nil {
		t.Fatal(err)
	}
	if _, rb := readLog(t, c, "s-branch"); len(rb) != 2 || rb[1].Step.Info().ID != "task" {
		t.Errorf("branch log: %+v", rb)
	}
	l, err := c.ListSessions(ctx, client.ListQuery{UserID: "u1", PageSize: 2})
	if err != nil || len(l.Sessions) != 2 || l.NextPageToken == "" || l.Sessions[0].ID != s.ID && l.Sessions[0].ParentID == "" {
		t.Fatalf("ListSessions: %+v, %v", l, err)
	}
	if l2, err := c.ListSessions(ctx, client.ListQuery{UserID: "u1", PageToken: l.NextPageToken}); err != nil || len(l2.Sessions) != 1 || l2.NextPageToken != "" {
		t.Errorf("ListSessions, page 2: %+v, %v", l2, err)
	}
	if err := c.DeleteSession(ctx, "s-branch2"); err != nil {
		t.Errorf("DeleteSession: %v", err)
	}
	if _, err := c.GetSession(ctx, "s-branch2"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("GetSession of a deleted session: %v", err)
	}
}

func TestReadPages(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil)
	if _, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	// More entries than one page of the read route.
	const n = api.DefaultReadLimit*2 + 17
	for start := 0; start < n; start += api.MaxStepsPerRequest {
		var ss []agentmem.Step
		for i := start; i < min(n, start+api.MaxStepsPerRequest); i++ {
			ss = append(ss, task(fmt.Sprintf("t%d", i), "x"))
		}
		if _, err := c.AppendSteps(ctx, "s", steps(t, ss...), client.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A compaction entry among the steps, in the second page.
	if _, err := c.AppendWithCompaction(ctx, "s", api.AppendStepsRequest{Compaction: &api.CompactionRecord{Amend: true,
		Replaced: steps(t, &agentmem.TaskStep{StepInfo: agentmem.StepInfo{Number: 1500, ID: "t1499"}, Task: "y"})}}, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	const last = n + 1
	for _, tc := range []struct {
		after      int64
		limit      int
		first, cnt int64
	}{
		{0, 0, 1, last},
		{10, 0, 11, last - 10},
		{10, 1500, 11, 1500},
		{last - 1, 0, last, 1},
		{last, 0, 0, 0},
	} {
		r, err := c.ReadLog(ctx, "s", tc.after, tc.limit)
		if err != nil {
			t.Fatalf("ReadLog(%d, %d): %v", tc.after, tc.limit, err)
		}
		es, err := apiconv.EntriesFromAPI(r)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(es)) != tc.cnt || (tc.cnt > 0 && es[0].Seq != tc.first) || r.LastSeq != last {
			t.Errorf("ReadLog(%d, %d): %d entries from %v, last %d", tc.after, tc.limit, len(es), es[:min(1, len(es))], r.LastSeq)
		}
		for i, en := range es {
			if en.Seq != tc.first+int64(i) || (en.Kind == store.StepEntry) != (en.Seq != last) {
				t.Fatalf("ReadLog(%d, %d): entry %d has seq %d (%s)", tc.after, tc.limit, i, en.Seq, en.Kind)
			}
		}
	}
	if r, err := c.ReadSteps(ctx, "s", client.ReadQuery{Last: 5}); err != nil || len(r.Steps) != 4 || len(r.Compactions) != 1 || r.Compactions[0].Seq != last {
		t.Errorf("ReadSteps of the last 5: %+v, %v", r, err)
	}
}

func TestRecallAndFacts(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil, withLongTerm)
	if _, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "s", UserID: "u1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendMessages(ctx, "s", []api.OpenAIMessage{
		{Role: "user", Content: "My dog Pixel hates thunderstorms"},
		{Role: "assistant", Content: "Noted: Pixel and storms."},
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
	if _, err := c.GetRecall(ctx, "note-1"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("GetRecall of a deleted document: %v", err)
	}
	if _, err := c.SearchRecall(ctx, client.RecallQuery{Text: "x", Scope: "planet:earth"}); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("bad scope: %v", err)
	}

	// Facts: remember, reinforce, search, get, forget.
	rem, err := c.Remember(ctx, "u1", api.RememberRequest{Text: "Prefers table-driven tests", Confidence: 0.8, Source: api.FactSource{SessionID: "s"}})
	if err != nil || rem.Outcome != api.OutcomeAdded || rem.Fact.ID == "" || rem.Fact.EffectiveConfidence <= 0 {
		t.Fatalf("Remember: %+v, %v", rem, err)
	}
	if again, err := c.Remember(ctx, "u1", api.RememberRequest{Text: "prefers table driven tests"}); err != nil || again.Outcome != api.OutcomeReinforced || again.Fact.ID != rem.Fact.ID {
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
	if _, err := c.GetFact(ctx, "u2", rem.Fact.ID); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("GetFact of another user: %v", err)
	}
	if _, err := c.Remember(ctx, "u1", api.RememberRequest{Text: "x", Confidence: 7}); !errors.Is(err, client.ErrInvalid) {
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
	if _, err := c.GetFact(ctx, "u1", rem.Fact.ID); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("GetFact of a forgotten fact: %v", err)
	}
	if err := c.Forget(ctx, "u1", rem.Fact.ID, ""); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("Forget twice: %v", err)
	}
}

func TestPop(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil)
	if _, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "p"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pop(ctx, "p", client.PopOptions{}); !errors.Is(err, client.ErrNothingToPop) || !errors.Is(err, client.ErrConflict) {
		t.Fatalf("pop of an empty session: %v", err)
	}
	r, err := c.AppendMessages(ctx, "p", turn("1")[:3], client.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := r.LastSeq - 1
	_, err = c.Pop(ctx, "p", client.PopOptions{IfMatch: &stale})
	if e := apiErr(t, err); e.Status != 409 || e.LastSeq == nil || *e.LastSeq != r.LastSeq || !errors.Is(err, client.ErrConflict) {
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
	if _, err := c.Pop(ctx, "missing", client.PopOptions{}); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("pop of a missing session: %v", err)
	}
}

func TestItems(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil)
	if _, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "it"}); err != nil {
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
	if _, err := c.PopItem(ctx, "it", client.PopOptions{}); !errors.Is(err, client.ErrNothingToPop) {
		t.Errorf("pop of a cleared session: %v", err)
	}
	if _, err := c.AppendItems(ctx, "it", []json.RawMessage{json.RawMessage(`{"type":"function_call_output","call_id":"nobody","output":"x"}`)}, client.AppendOptions{}); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("an output of an unknown call: %v", err)
	}
	if _, err := c.Items(ctx, "missing", 0); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("items of a missing session: %v", err)
	}
}

// TestSessionSettings: CreateSession and Fork send a session's settings and
// return them as the server stores them (a fork without them takes its
// parent's).
func TestSessionSettings(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, nil)
	chat := api.Pinning{SystemPrompts: true, Summary: true}
	s, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "chat", Pinning: &chat, AutoCompact: &api.AutoCompact{MaxTokens: 4000}})
	want := api.AutoCompact{MaxTokens: 4000, TargetTokens: 2000, KeepRecent: agentmem.DefaultKeepRecent, Summarizer: api.SummarizerExtractive}
	if err != nil || *s.Pinning != chat || *s.AutoCompact != want {
		t.Fatalf("CreateSession: %+v, %v", s, err)
	}
	if _, err := c.AppendMessages(ctx, "chat", []api.OpenAIMessage{{Role: "user", Content: "hi"}}, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	br, err := c.Fork(ctx, "chat", api.ForkRequest{ID: "b"})
	if err != nil || *br.Pinning != chat || *br.AutoCompact != want {
		t.Fatalf("Fork: %+v, %v", br, err)
	}
	br, err = c.Fork(ctx, "chat", api.ForkRequest{ID: "b2", Pinning: &api.Pinning{FirstTask: true}})
	if err != nil || *br.Pinning != (api.Pinning{FirstTask: true}) || *br.AutoCompact != want {
		t.Fatalf("Fork with a pinning: %+v, %v", br, err)
	}
	if got, err := c.GetSession(ctx, "b2"); err != nil || *got.Pinning != *br.Pinning {
		t.Fatalf("GetSession: %+v, %v", got, err)
	}
	_, err = c.CreateSession(ctx, api.CreateSessionRequest{ID: "bad", AutoCompact: &api.AutoCompact{MaxTokens: 10, TargetTokens: 20}})
	if e := apiErr(t, err); !errors.Is(err, client.ErrInvalid) || e.Field != "auto_compact.target_tokens" {
		t.Fatalf("bad settings: %v", err)
	}
}
