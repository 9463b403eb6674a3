package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/api"
)

// The items routes: a session as the Responses-API items the OpenAI
// Agents SDK stores.

// Items as the SDK writes them (spacing and member order must survive).
const (
	itemUser      = `{"role": "user", "content": "What is the weather in Paris?"}`
	itemReasoning = `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Call the tool."}]}`
	itemCall      = `{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}","id":"fc_1","status":"completed"}`
	itemOutput    = `{"type":"function_call_output","call_id":"call_1","output":"sunny, 21°C"}`
	itemWebSearch = `{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"paris"}}`
	itemAnswer    = `{"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"It is sunny in Paris.","annotations":[]}]}`
)

func itemsBody(items ...string) string { return `{"items":[` + strings.Join(items, ",") + `]}` }

// wantItems checks a session's items (GET, with an optional query).
func (e *env) wantItems(id, query string, want ...string) {
	e.t.Helper()
	var got struct {
		Items []json.RawMessage `json:"items"`
	}
	e.must(200, "GET", "/v1/sessions/"+id+"/items"+query, nil).json(e.t, &got)
	if len(got.Items) != len(want) {
		e.t.Fatalf("%d items, want %d: %s", len(got.Items), len(want), got.Items)
	}
	for i, w := range want {
		var b bytes.Buffer
		if err := json.Compact(&b, []byte(w)); err != nil {
			e.t.Fatal(err)
		}
		if string(got.Items[i]) != b.String() {
			e.t.Fatalf("item %d: %s, want %s", i, got.Items[i], b.String())
		}
	}
}

// popItem pops an item and checks it is want.
func (e *env) popItem(id, want string) {
	e.t.Helper()
	var got api.PopItemResponse
	e.must(200, "POST", "/v1/sessions/"+id+"/items/pop", nil).json(e.t, &got)
	var b bytes.Buffer
	_ = json.Compact(&b, []byte(want))
	if string(got.Item) != b.String() {
		e.t.Fatalf("popped %s, want %s", got.Item, b.String())
	}
}

func itemsScenario(t *testing.T, e *env) {
	e.create("it")
	// The turn's items, the call before its output (item by item).
	var r api.AppendResponse
	e.must(201, "POST", "/v1/sessions/it/items", itemsBody(itemUser, itemReasoning, itemCall)).json(t, &r)
	if len(r.Seqs) != 3 || r.LastSeq != 3 {
		t.Fatalf("append: %+v", r)
	}
	e.wantItems("it", "", itemUser, itemReasoning, itemCall)
	// The call is pending: not rendered; the reasoning is no chat turn.
	c := e.wantPending("it", []api.PendingCalls{{Seq: 3, ToolCallIDs: []string{"call_1"}}}, "call_1")
	if strings.Contains(string(c.Messages), "rs_1") || strings.Contains(string(c.Messages), "Call the tool") || !strings.Contains(string(c.Messages), "weather in Paris") {
		t.Fatalf("context: %s", c.Messages)
	}

	// The output, in a later request, with an Idempotency-Key; a retry
	// stores nothing.
	e.must(201, "POST", "/v1/sessions/it/items", itemsBody(itemOutput), "Idempotency-Key", "out-1").json(t, &r)
	if len(r.Seqs) != 0 || len(r.Updated) != 1 || r.Updated[0] != 3 || r.LastSeq != 4 {
		t.Fatalf("output: %+v", r)
	}
	before := e.logOf("it")
	e.must(201, "POST", "/v1/sessions/it/items", itemsBody(itemOutput), "Idempotency-Key", "out-1").json(t, &r)
	if r.LastSeq != 4 || e.logOf("it") != before {
		t.Fatalf("a retried output stored something: %+v", r)
	}
	// A retry of a request with steps and an output of its own.
	body := itemsBody(itemWebSearch, itemAnswer)
	e.must(201, "POST", "/v1/sessions/it/items", body, "Idempotency-Key", "turn-2").json(t, &r)
	seqs := r.Seqs
	e.must(201, "POST", "/v1/sessions/it/items", body, "Idempotency-Key", "turn-2").json(t, &r)
	if len(r.Seqs) != 2 || r.Seqs[0] != seqs[0] || r.LastSeq != 6 {
		t.Fatalf("a retried request: %+v, first %v", r, seqs)
	}
	e.must(409, "POST", "/v1/sessions/it/items", itemsBody(itemAnswer), "Idempotency-Key", "turn-2")
	all := []string{itemUser, itemReasoning, itemCall, itemOutput, itemWebSearch, itemAnswer}
	e.wantItems("it", "", all...)
	e.wantItems("it", "?limit=2", itemWebSearch, itemAnswer)
	e.wantItems("it", "?limit=100", all...)
	c = e.wantPending("it", []api.PendingCalls{})
	if !strings.Contains(string(c.Messages), "sunny, 21°C") || !strings.Contains(string(c.Messages), "It is sunny in Paris.") {
		t.Fatalf("context: %s", c.Messages)
	}

	// Refusals store nothing.
	before = e.logOf("it")
	for _, tc := range []struct {
		status      int
		body, field string
		code        string
	}{
		{400, itemsBody(itemUser, `{"type":"function_call_output","call_id":"nobody","output":"x"}`), "items[1].call_id", api.CodeInvalid},
		{409, itemsBody(`{"type":"function_call_output","call_id":"call_1","output":"rainy"}`), "items[0].output", api.CodeToolResultConflict},
		{400, itemsBody(itemUser, `{"role":"robot","content":"x"}`), "items[1].role", api.CodeInvalid},
		{400, itemsBody(`{"type":"function_call","call_id":"c","name":"f"}`), "items[0].arguments", api.CodeInvalid},
		{400, itemsBody(`[]`), "items[0]", api.CodeInvalid},
		{400, `{"items":[]}`, "items", api.CodeInvalid},
		{400, `{"items":[{"role":"user","content":"x","content":"y"}]}`, "items[0].content", api.CodeInvalid},
		{400, `[` + itemUser + `]`, "", api.CodeInvalid},
		{400, `{"itemz":[]}`, "itemz", api.CodeInvalid},
		// Two calls with one ID, both awaiting their output: one output
		// would leave the other pending for good.
		{400, itemsBody(`{"type":"function_call","call_id":"dup","name":"f","arguments":"{}"}`, itemUser, `{"type":"function_call","call_id":"dup","name":"g","arguments":"{}"}`), "items[2].call_id", api.CodeInvalid},
	} {
		ae := e.must(tc.status, "POST", "/v1/sessions/it/items", tc.body).apiErr(t)
		if ae.Code != tc.code || ae.Field != tc.field {
			t.Fatalf("%s: %+v, want %s on %q", tc.body, ae, tc.code, tc.field)
		}
		if tc.field == "items[2].call_id" && ae.Message != `"dup" is also the ID of a call of items[0] that has no result yet: a call ID is made again only once its call has its result` {
			t.Fatalf("the refusal of a call ID made twice says %q", ae.Message)
		}
	}
	ae := e.must(409, "POST", "/v1/sessions/it/items", itemsBody(itemUser), "If-Match", `"5"`).apiErr(t)
	if ae.Code != api.CodeConflict || ae.LastSeq == nil || *ae.LastSeq != 6 {
		t.Fatalf("a stale If-Match: %+v", ae)
	}
	e.must(404, "POST", "/v1/sessions/missing/items", itemsBody(itemUser))
	e.must(404, "GET", "/v1/sessions/missing/items", nil)
	e.must(400, "GET", "/v1/sessions/it/items?limit=0", nil)
	if e.logOf("it") != before {
		t.Fatal("a refused request changed the log")
	}

	// Pop: the answer, the web search, then the output, which leaves its
	// call pending again; a new output answers it.
	e.popItem("it", itemAnswer)
	e.popItem("it", itemWebSearch)
	e.popItem("it", itemOutput)
	e.wantItems("it", "", itemUser, itemReasoning, itemCall)
	e.wantPending("it", []api.PendingCalls{{Seq: 3, ToolCallIDs: []string{"call_1"}}}, "call_1")
	rainy := `{"type":"function_call_output","call_id":"call_1","output":"rainy"}`
	e.must(201, "POST", "/v1/sessions/it/items", itemsBody(rainy))
	e.wantItems("it", "", itemUser, itemReasoning, itemCall, rainy)
	// An output that arrives after other items comes back after them,
	// and pops first although its call is older.
	call2 := `{"type":"function_call","call_id":"call_2","name":"get_time","arguments":"{}"}`
	out2 := `{"type":"function_call_output","call_id":"call_2","output":"noon"}`
	e.must(201, "POST", "/v1/sessions/it/items", itemsBody(call2))
	e.must(201, "POST", "/v1/sessions/it/items", itemsBody(itemWebSearch))
	e.must(201, "POST", "/v1/sessions/it/items", itemsBody(out2))
	e.wantItems("it", "", itemUser, itemReasoning, itemCall, rainy, call2, itemWebSearch, out2)
	e.popItem("it", out2)
	e.popItem("it", itemWebSearch)
	e.wantItems("it", "", itemUser, itemReasoning, itemCall, rainy, call2)

	// Compactions keep each item's JSON: a truncated output comes back
	// whole; steps dropped by keep_last_n take their items with them.
	e.create("cmp")
	long := `{"type":"function_call_output","call_id":"call_1","output":"` + strings.Repeat("sunny ", 200) + `"}`
	e.must(201, "POST", "/v1/sessions/cmp/items", itemsBody(itemUser, itemCall, long, itemAnswer))
	var cr api.CompactResponse
	e.must(200, "POST", "/v1/sessions/cmp/compact", `{"strategy":"prune_old_observations","keep_last_n":0,"max_length":20}`).json(t, &cr)
	if len(cr.Replaced) != 1 {
		t.Fatalf("compaction: %+v", cr)
	}
	if c := e.contextOf("cmp", "openai"); strings.Contains(string(c.Messages), strings.Repeat("sunny ", 10)) {
		t.Fatalf("the context shows the whole output: %s", c.Messages)
	}
	e.wantItems("cmp", "", itemUser, itemCall, long, itemAnswer)
	e.popItem("cmp", itemAnswer)
	e.popItem("cmp", long)
	e.wantItems("cmp", "", itemUser, itemCall)
	e.must(201, "POST", "/v1/sessions/cmp/items", itemsBody(long, itemAnswer))
	e.must(200, "POST", "/v1/sessions/cmp/compact", `{"strategy":"keep_last_n","n":1}`).json(t, &cr)
	e.wantItems("cmp", "", itemUser, itemAnswer) // the first task is pinned

	// Outputs sent at once, each first in its request: the appends that
	// lose the race read the working set again; none is lost, and each
	// comes back after the calls.
	e.create("race")
	var calls []string
	for i := range 4 {
		calls = append(calls, `{"type":"function_call","call_id":"r`+itoa(i)+`","name":"f","arguments":"{}"}`)
	}
	e.must(201, "POST", "/v1/sessions/race/items", itemsBody(calls...))
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range 4 {
		wg.Go(func() {
			codes[i] = e.do("POST", "/v1/sessions/race/items", itemsBody(`{"type":"function_call_output","call_id":"r`+itoa(i)+`","output":"o`+itoa(i)+`"}`)).code
		})
	}
	wg.Wait()
	var raced api.ItemsResponse
	e.must(200, "GET", "/v1/sessions/race/items", nil).json(t, &raced)
	if fmt.Sprint(codes) != "[201 201 201 201]" || len(raced.Items) != 8 {
		t.Fatalf("concurrent outputs: %v, %d items", codes, len(raced.Items))
	}
	seen := map[string]bool{}
	for i, it := range raced.Items {
		if (i < 4) != strings.Contains(string(it), "function_call\"") {
			t.Fatalf("item %d: %s", i, it)
		}
		seen[string(it)] = true
	}
	if len(seen) != 8 {
		t.Fatalf("items: %s", raced.Items)
	}
	e.wantPending("race", []api.PendingCalls{})

	// Clear: the working set empties, the log keeps everything, the
	// session goes on.
	logBefore := e.logOf("it")
	r2 := e.must(204, "DELETE", "/v1/sessions/it/items", nil)
	if len(r2.body) != 0 || r2.header.Get("ETag") == "" {
		t.Fatalf("clear: %q %v", r2.body, r2.header)
	}
	e.wantItems("it", "")
	var log readSteps
	e.must(200, "GET", "/v1/sessions/it/steps?limit=10000", nil).json(t, &log)
	last := log.Compactions[len(log.Compactions)-1]
	if len(log.Steps) != 7 || last.Working == nil || len(*last.Working) != 0 || len(last.Removed) != 4 || log.LastSeq != last.Seq {
		t.Fatalf("the log after a clear: %d steps, last compaction %+v", len(log.Steps), last)
	}
	if !strings.HasPrefix(e.logOf("it"), logBefore[:strings.Index(logBefore, `"compactions"`)]) {
		t.Fatal("a clear changed the log's steps")
	}
	ae = e.must(409, "POST", "/v1/sessions/it/items/pop", nil).apiErr(t)
	if ae.Code != api.CodeNothingToPop {
		t.Fatalf("a pop of an empty session: %+v", ae)
	}
	e.must(204, "DELETE", "/v1/sessions/it/items", nil)
	e.must(201, "POST", "/v1/sessions/it/items", itemsBody(itemUser))
	e.wantItems("it", "", itemUser)
	e.must(404, "DELETE", "/v1/sessions/missing/items", nil)
	e.must(404, "POST", "/v1/sessions/missing/items/pop", nil)
}

func TestItems(t *testing.T) {
	itemsScenario(t, newEnv(t))
}

func TestItemsOnSQLite(t *testing.T) {
	st := sqliteStore(t)
	itemsScenario(t, envOn(t, st))
}

func TestItemsOnPostgres(t *testing.T) {
	st := postgresStore(t)
	itemsScenario(t, envOn(t, st))
}
