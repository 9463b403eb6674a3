package server

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/postgres"
	"github.com/agentmem/agentmem/store/sqlite"
)

// Item-by-item appends: the messages of a turn sent one request at a
// time, as agent frameworks save them, and pop.

const twoCalls = `{"role":"assistant","content":"Looking.","tool_calls":[
	{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}},
	{"id":"c2","type":"function","function":{"name":"pwd","arguments":"{}"}}]}`

func toolResult(id, content string) string {
	return `{"role":"tool","tool_call_id":"` + id + `","content":` + quote(content) + `}`
}

// wireContext is a context response with its messages left as JSON.
type wireContext struct {
	api.ContextResponse
	Messages json.RawMessage `json:"messages"`
}

// contextOf reads a session's context in a format.
func (e *env) contextOf(id, format string) wireContext {
	e.t.Helper()
	var c wireContext
	e.must(200, "GET", "/v1/sessions/"+id+"/context?format="+format, nil).json(e.t, &c)
	return c
}

// wantPending checks a context's pending list and that no call of a
// pending action shows in its messages, in every format.
func (e *env) wantPending(id string, want []api.PendingCalls, hidden ...string) wireContext {
	e.t.Helper()
	var c wireContext
	for _, f := range []string{render.NameOpenAI, render.NameAnthropic, render.NameObservation} {
		c = e.contextOf(id, f)
		if !reflect.DeepEqual(c.Pending, want) {
			e.t.Fatalf("%s: pending %+v, want %+v", f, c.Pending, want)
		}
		for _, callID := range hidden {
			if strings.Contains(string(c.Messages), `"`+callID+`"`) {
				e.t.Fatalf("%s: pending call %s rendered: %s", f, callID, c.Messages)
			}
		}
	}
	return e.contextOf(id, render.NameOpenAI)
}

// appendMessages posts messages and returns the answer, checking its
// ETag.
func (e *env) appendMessages(id, body string, headers ...string) api.AppendResponse {
	e.t.Helper()
	var ar api.AppendResponse
	r := e.must(201, "POST", "/v1/sessions/"+id+"/messages", body, headers...)
	r.json(e.t, &ar)
	if r.header.Get("ETag") != etag(ar.LastSeq) {
		e.t.Fatalf("ETag %q, last_seq %d", r.header.Get("ETag"), ar.LastSeq)
	}
	return ar
}

// itemByItem drives a session through a turn sent message by message.
func itemByItem(t *testing.T, e *env) {
	e.create("s")
	e.must(201, "POST", "/v1/sessions/s/messages", `[{"role":"system","content":"You are a coding agent."},{"role":"user","content":"List the files."}]`)
	ar := e.appendMessages("s", twoCalls, "Idempotency-Key", "turn-1")
	if fmt.Sprint(ar.Seqs) != "[3]" || ar.LastSeq != 3 || ar.Updated != nil {
		t.Fatalf("the assistant message: %+v", ar)
	}
	c := e.wantPending("s", []api.PendingCalls{{Seq: 3, ToolCallIDs: []string{"c1", "c2"}}}, "c1", "c2")
	if !slices.Equal(c.Steps, []int{1, 2}) || c.DroppedSteps != 0 {
		t.Fatalf("context while pending: steps %v dropped %d", c.Steps, c.DroppedSteps)
	}
	// The second call's result first, in a request of its own.
	ar = e.appendMessages("s", toolResult("c2", "/src"), "Idempotency-Key", "turn-2")
	if len(ar.Seqs) != 0 || !slices.Equal(ar.Updated, []int64{3}) || ar.CompactionSeq != 4 || ar.LastSeq != 4 {
		t.Fatalf("the first result: %+v", ar)
	}
	e.wantPending("s", []api.PendingCalls{{Seq: 3, ToolCallIDs: []string{"c1"}}}, "c1", "c2")
	// A retry of it stores nothing and is answered as the request was.
	ar = e.appendMessages("s", toolResult("c2", "/src"), "Idempotency-Key", "turn-2")
	if ar.LastSeq != 4 || len(ar.Seqs) != 0 || !slices.Equal(ar.Updated, []int64{3}) || ar.CompactionSeq != 4 {
		t.Fatalf("the retried result: %+v", ar)
	}
	// The last result completes the action.
	ar = e.appendMessages("s", toolResult("c1", "a.go b.go"))
	if !slices.Equal(ar.Updated, []int64{3}) || ar.CompactionSeq != 5 {
		t.Fatalf("the last result: %+v", ar)
	}
	c = e.wantPending("s", []api.PendingCalls{})
	var msgs []render.OpenAIMessage
	if err := json.Unmarshal(c.Messages, &msgs); err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 5 || len(msgs[2].ToolCalls) != 2 || msgs[3].ToolCallID != "c1" || msgs[3].Content != "a.go b.go" || msgs[4].ToolCallID != "c2" || msgs[4].Content != "/src" {
		t.Fatalf("context after the results: %s", c.Messages)
	}
	if !slices.Equal(c.Steps, []int{1, 2, 3}) || c.LastSeq != 5 {
		t.Fatalf("context after the results: steps %v last %d", c.Steps, c.LastSeq)
	}
	// The log keeps the pending original and the two completions.
	var rs readSteps
	e.must(200, "GET", "/v1/sessions/s/steps", nil).json(t, &rs)
	if len(rs.Steps) != 3 || !rs.Steps[2].(*agentmem.ActionStep).Pending() || len(rs.Compactions) != 2 {
		t.Fatalf("log: %d steps, %d compactions", len(rs.Steps), len(rs.Compactions))
	}
	if got := rs.Compactions[1].Replaced[0].(*agentmem.ActionStep); got.Pending() || got.Number != 3 || got.ID != "turn-1/0" {
		t.Fatalf("the completing copy: %+v", got)
	}
	// Each completion is an amendment: the copy alone, no working list.
	var raw struct {
		Compactions []map[string]json.RawMessage `json:"compactions"`
	}
	e.must(200, "GET", "/v1/sessions/s/steps", nil).json(t, &raw)
	for _, c := range raw.Compactions {
		if string(c["amend"]) != "true" || c["working"] != nil || c["removed"] != nil {
			t.Fatalf("a completion's compaction entry: %s", e.logOf("s"))
		}
	}

	// A different result for an answered call.
	r := e.must(409, "POST", "/v1/sessions/s/messages", toolResult("c1", "c.go"))
	if err := r.apiErr(t); err.Code != api.CodeToolResultConflict || err.Field != "content" || !strings.Contains(err.Message, `"c1"`) {
		t.Fatalf("a conflicting result: %+v", err)
	}
	// A result for a call nobody made.
	r = e.must(400, "POST", "/v1/sessions/s/messages", `[{"role":"user","content":"x"},`+toolResult("c9", "x")+`]`)
	if err := r.apiErr(t); err.Code != api.CodeInvalid || err.Field != "messages[1].tool_call_id" || !strings.Contains(err.Message, `"c9"`) {
		t.Fatalf("an unknown call: %+v", err)
	}
	// If-Match that no longer holds.
	e.must(201, "POST", "/v1/sessions/s/messages", `{"role":"assistant","tool_calls":[{"id":"c3","type":"function","function":{"name":"cat","arguments":"{}"}}]}`)
	before := e.logOf("s")
	r = e.must(409, "POST", "/v1/sessions/s/messages", toolResult("c3", "x"), "If-Match", `"5"`)
	if err := r.apiErr(t); err.Code != api.CodeConflict || err.Field != "If-Match" || r.header.Get("ETag") != `"6"` {
		t.Fatalf("a stale If-Match: %+v %v", err, r.header)
	}
	if e.logOf("s") != before {
		t.Fatal("refused results changed the log")
	}
	e.must(201, "POST", "/v1/sessions/s/messages", toolResult("c3", "x"), "If-Match", `"6"`)
	e.wantPending("s", []api.PendingCalls{})
}

func TestItemByItemMessages(t *testing.T) {
	itemByItem(t, newEnv(t))
}

// TestConcurrentToolResults sends the results of an assistant message's
// calls from concurrent requests: none is lost.
func TestConcurrentToolResults(t *testing.T) {
	e := newEnv(t)
	concurrentResults(t, e)
}

func concurrentResults(t *testing.T, e *env) {
	e.create("c")
	const n = 4
	calls := make([]string, n)
	for i := range calls {
		calls[i] = fmt.Sprintf(`{"id":"k%d","type":"function","function":{"name":"f","arguments":"{}"}}`, i)
	}
	e.must(201, "POST", "/v1/sessions/c/messages", `[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[`+strings.Join(calls, ",")+`]}]`)
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			codes[i] = e.do("POST", "/v1/sessions/c/messages", toolResult(fmt.Sprintf("k%d", i), fmt.Sprintf("result %d", i))).code
		})
	}
	wg.Wait()
	for i, code := range codes {
		if code != 201 {
			t.Fatalf("result %d: status %d", i, code)
		}
	}
	c := e.wantPending("c", []api.PendingCalls{})
	var msgs []render.OpenAIMessage
	if err := json.Unmarshal(c.Messages, &msgs); err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2+n {
		t.Fatalf("context: %s", c.Messages)
	}
	for i := range n {
		if m := msgs[2+i]; m.ToolCallID != fmt.Sprintf("k%d", i) || m.Content != fmt.Sprintf("result %d", i) {
			t.Fatalf("result %d: %+v", i, m)
		}
	}
}

// popped pops the newest message of a session.
func (e *env) popped(id string, headers ...string) api.PopResponse {
	e.t.Helper()
	var p api.PopResponse
	e.must(200, "POST", "/v1/sessions/"+id+"/pop", nil, headers...).json(e.t, &p)
	return p
}

// popScenario pops every kind of message off a session, down to nothing.
func popScenario(t *testing.T, e *env) {
	e.must(404, "POST", "/v1/sessions/nope/pop", nil)
	e.create("p")
	r := e.must(409, "POST", "/v1/sessions/p/pop", nil)
	if err := r.apiErr(t); err.Code != api.CodeNothingToPop {
		t.Fatalf("pop of an empty session: %+v", err)
	}
	e.must(201, "POST", "/v1/sessions/p/messages", `[{"role":"system","content":"sys"},{"role":"user","content":"List the files."},`+twoCalls+`,`+
		toolResult("c1", "a.go")+`,`+toolResult("c2", "/src")+`,{"role":"assistant","content":"Two files."}]`)
	// The newest message: the assistant's answer, a step of its own.
	p := e.popped("p")
	if p.Seq != 4 || !p.Removed || p.Message.Role != "assistant" || p.Message.Content != "Two files." || p.CompactionSeq != 5 || p.LastSeq != 5 {
		t.Fatalf("pop the answer: %+v", p)
	}
	// Then a tool result: its call is pending again.
	p = e.popped("p")
	if p.Seq != 3 || p.Removed || p.Message.Role != "tool" || p.Message.ToolCallID != "c2" || p.Message.Content != "/src" {
		t.Fatalf("pop a result: %+v", p)
	}
	e.wantPending("p", []api.PendingCalls{{Seq: 3, ToolCallIDs: []string{"c2"}}}, "c1", "c2")
	// Which a result appended later answers again.
	e.must(201, "POST", "/v1/sessions/p/messages", toolResult("c2", "/home"))
	c := e.wantPending("p", []api.PendingCalls{})
	if !strings.Contains(string(c.Messages), "/home") || strings.Contains(string(c.Messages), "Two files.") {
		t.Fatalf("context after pop and append: %s", c.Messages)
	}
	// If-Match is honoured: a stale one pops nothing.
	before := e.logOf("p")
	r = e.must(409, "POST", "/v1/sessions/p/pop", nil, "If-Match", `"6"`)
	if err := r.apiErr(t); err.Code != api.CodeConflict || err.Field != "If-Match" || r.header.Get("ETag") != `"7"` {
		t.Fatalf("a stale If-Match: %+v", err)
	}
	e.must(400, "POST", "/v1/sessions/p/pop", nil, "If-Match", `"x"`)
	if e.logOf("p") != before {
		t.Fatal("a refused pop changed the log")
	}
	// A body other than {} is refused.
	e.must(400, "POST", "/v1/sessions/p/pop", `{"n":2}`)
	p = e.popped("p", "If-Match", `"7"`)
	if p.Message.ToolCallID != "c2" || p.Message.Content != "/home" {
		t.Fatalf("pop with If-Match: %+v", p)
	}
	if p = e.popped("p"); p.Message.ToolCallID != "c1" || p.Removed {
		t.Fatalf("pop the other result: %+v", p)
	}
	// The assistant message with its calls: the action leaves whole.
	var got api.PopResponse
	e.must(200, "POST", "/v1/sessions/p/pop", `{}`).json(t, &got)
	if got.Seq != 3 || !got.Removed || got.Message.Role != "assistant" || len(got.Message.ToolCalls) != 2 || got.Message.Content != "Looking." {
		t.Fatalf("pop the calls: %+v", got)
	}
	c = e.wantPending("p", []api.PendingCalls{})
	if !slices.Equal(c.Steps, []int{1, 2}) {
		t.Fatalf("context after popping the turn: %v", c.Steps)
	}
	if p = e.popped("p"); p.Message.Role != "user" || p.Message.Content != "List the files." {
		t.Fatalf("pop the task: %+v", p)
	}
	if p = e.popped("p"); p.Message.Role != "system" || p.LastSeq != 12 {
		t.Fatalf("pop the system prompt: %+v", p)
	}
	e.must(409, "POST", "/v1/sessions/p/pop", nil)
	// The log keeps it all: 4 steps, and 8 compactions (7 pops and the
	// completion).
	var rs readSteps
	e.must(200, "GET", "/v1/sessions/p/steps", nil).json(t, &rs)
	if len(rs.Steps) != 4 || len(rs.Compactions) != 8 || rs.LastSeq != 12 {
		t.Fatalf("log: %d steps, %d compactions, last %d", len(rs.Steps), len(rs.Compactions), rs.LastSeq)
	}
}

func TestPop(t *testing.T) {
	popScenario(t, newEnv(t))
}

func TestPendingOnSQLite(t *testing.T) {
	st := sqliteStore(t)
	e := envOn(t, st)
	itemByItem(t, e)
	concurrentResults(t, e)
	popScenario(t, e)
}

func TestPendingOnPostgres(t *testing.T) {
	st := postgresStore(t)
	e := envOn(t, st)
	itemByItem(t, e)
	concurrentResults(t, e)
	popScenario(t, e)
}

// envOn returns an env whose server uses st.
// sqliteStore opens a new SQLite store for the test, closed when it ends.
func sqliteStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "agentmem.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// postgresStore opens the test database's store in a schema of its own,
// closed when the test ends; without PostgreSQL the test is skipped (or
// fails in CI).
func postgresStore(t *testing.T) *store.Store {
	t.Helper()
	url := testenv.PostgresURL(t)
	st, err := postgres.Open(context.Background(), url, postgres.Options{Schema: testenv.FreshSchema(t, url)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func envOn(t *testing.T, st *store.Store) *env {
	t.Helper()
	return newEnv(t, func(c *Config) { c.Store = st })
}

// logOf is a session's whole log as the API returns it, to check that a
// refused request changed nothing (on any backend).
func (e *env) logOf(id string) string {
	e.t.Helper()
	return string(e.must(200, "GET", "/v1/sessions/"+id+"/steps?limit=10000", nil).body)
}
