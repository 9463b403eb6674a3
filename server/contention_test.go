package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
)

// A busy session: writers append to it while the results of its pending
// tool calls arrive one by one and the server compacts it. None of those
// writes states a position in the log, so none may be refused for
// losing a race: the server retries them itself (store.RetryPolicy). A
// write whose client stated a position (If-Match) is not retried: its
// conflict is the answer.
func busyScenario(t *testing.T, e *env) {
	const (
		writers     = 8  // appending steps without If-Match
		each        = 12 // steps per writer
		results     = 24 // tool results of one pending action, sent one by one
		compactions = 8  // server-planned compactions
	)
	e.create("busy")
	calls := make([]string, results)
	for i := range calls {
		calls[i] = fmt.Sprintf(`{"id":"k%d","type":"function","function":{"name":"f","arguments":"{}"}}`, i)
	}
	e.must(201, "POST", "/v1/sessions/busy/messages", `[{"role":"system","content":"Be brief."},{"role":"user","content":"go"},`+
		`{"role":"assistant","tool_calls":[`+strings.Join(calls, ",")+`]}]`)

	// Every request is made at once when start closes; what each got is
	// checked after all have returned.
	type answer struct {
		what string
		r    *response
		want int
	}
	var (
		mu      sync.Mutex
		answers []answer
		wg      sync.WaitGroup
	)
	start := make(chan struct{})
	send := func(what string, want int, method, path, body string) {
		wg.Go(func() {
			<-start
			r := e.do(method, path, body)
			mu.Lock()
			answers = append(answers, answer{what, r, want})
			mu.Unlock()
		})
	}
	// The writers' steps are actions with long observations, which the
	// compactions cut down, so that each compaction has something to
	// write.
	long := strings.Repeat("observed ", 20)
	for w := range writers {
		wg.Go(func() {
			<-start
			for i := range each {
				step := fmt.Sprintf(`{"type":"action","id":"w%d-%d","model_output":"writer %d","observation":%q}`, w, i, w, long)
				r := e.do("POST", "/v1/sessions/busy/steps", step)
				mu.Lock()
				answers = append(answers, answer{fmt.Sprintf("writer %d step %d", w, i), r, 201})
				mu.Unlock()
			}
		})
	}
	// Half the results come as chat tool messages, half as Responses-API
	// items, as the frameworks that save messages one at a time send them.
	for i := range results {
		if i%2 == 0 {
			send(fmt.Sprintf("tool result %d (messages)", i), 201, "POST", "/v1/sessions/busy/messages", toolResult(fmt.Sprintf("k%d", i), fmt.Sprintf("result %d", i)))
		} else {
			send(fmt.Sprintf("tool result %d (items)", i), 201, "POST", "/v1/sessions/busy/items",
				itemsBody(fmt.Sprintf(`{"type":"function_call_output","call_id":"k%d","output":"result %d"}`, i, i)))
		}
	}
	for i := range compactions {
		send(fmt.Sprintf("compaction %d", i), 200, "POST", "/v1/sessions/busy/compact", `{"strategy":"prune_old_observations","keep_last_n":0,"max_length":16}`)
	}
	close(start)
	wg.Wait()
	for _, a := range answers {
		if a.r.code != a.want {
			t.Errorf("%s: status %d, want %d: %s", a.what, a.r.code, a.want, a.r.body)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Each result is in the working set once, with its content, and no
	// call is pending.
	e.wantPending("busy", []api.PendingCalls{})
	var items api.ItemsResponse
	e.must(200, "GET", "/v1/sessions/busy/items", nil).json(t, &items)
	outputs := map[string][]string{}
	for _, it := range items.Items {
		var o struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
			Output string `json:"output"`
		}
		if err := json.Unmarshal(it, &o); err != nil {
			t.Fatal(err)
		}
		if o.Type == "function_call_output" && strings.HasPrefix(o.CallID, "k") {
			outputs[o.CallID] = append(outputs[o.CallID], o.Output)
		}
	}
	for i := range results {
		id := fmt.Sprintf("k%d", i)
		if got := outputs[id]; len(got) != 1 || got[0] != fmt.Sprintf("result %d", i) {
			t.Errorf("call %s: results %q, want one: %q", id, got, fmt.Sprintf("result %d", i))
		}
	}
	// Each writer's step is in the log once.
	var log readSteps
	e.must(200, "GET", "/v1/sessions/busy/steps?limit=10000", nil).json(t, &log)
	seen := map[string]int{}
	for _, st := range log.Steps {
		seen[st.Info().ID]++
	}
	for w := range writers {
		for i := range each {
			if id := fmt.Sprintf("w%d-%d", w, i); seen[id] != 1 {
				t.Errorf("step %s is in the log %d times", id, seen[id])
			}
		}
	}

	// A write that states where the log is and is wrong is answered 409,
	// not retried into success: on every append route, and for a tool
	// result too.
	e.must(201, "POST", "/v1/sessions/busy/messages", `{"role":"assistant","tool_calls":[{"id":"late","type":"function","function":{"name":"f","arguments":"{}"}}]}`)
	before := e.logOf("busy")
	stale := fmt.Sprintf(`"%d"`, log.LastSeq)
	for _, w := range []struct{ path, body string }{
		{"/v1/sessions/busy/steps", taskStep},
		{"/v1/sessions/busy/messages", toolResult("late", "too late")},
		{"/v1/sessions/busy/items", itemsBody(`{"type":"function_call_output","call_id":"late","output":"too late"}`)},
		{"/v1/sessions/busy/pop", ""},
	} {
		var body any
		if w.body != "" {
			body = w.body
		}
		r := e.must(409, "POST", w.path, body, "If-Match", stale)
		if ae := r.apiErr(t); ae.Code != api.CodeConflict || ae.Field != "If-Match" {
			t.Errorf("POST %s with a stale If-Match: %+v", w.path, ae)
		}
	}
	if e.logOf("busy") != before {
		t.Error("a write refused for a stale If-Match changed the log")
	}
}

// patient gives the busy scenario's server a retry bound no loaded
// machine reaches: the scenario checks that position-independent writes
// are retried until they succeed, each stored once; the bound itself and
// the 503 past it are TestContendedWrites'.
func patient(st *store.Store) func(*Config) {
	return func(c *Config) {
		if st != nil {
			c.Store = st
		}
		svc, err := sessions.New(sessions.Config{Store: c.Store, Clock: c.Clock,
			Retry: &store.RetryPolicy{Attempts: 10000, Within: 2 * time.Minute}})
		if err != nil {
			panic(err)
		}
		c.Sessions = svc
	}
}

func TestBusySession(t *testing.T) {
	busyScenario(t, newEnv(t, patient(nil)))
}

func TestBusySessionOnSQLite(t *testing.T) {
	st := sqliteStore(t)
	busyScenario(t, newEnv(t, patient(st)))
}

func TestBusySessionOnPostgres(t *testing.T) {
	st := postgresStore(t)
	busyScenario(t, newEnv(t, patient(st)))
}

// intruder is a store in which, while on, another writer gets ahead of
// every conditional append: it appends a step of its own first.
type intruder struct {
	store.Driver
	on     atomic.Bool
	steps  atomic.Int64
	writes atomic.Int64 // conditional appends
}

func (in *intruder) Append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	if req.ExpectedLastSeq != nil {
		in.writes.Add(1)
		if in.on.Load() {
			n := in.steps.Add(1)
			step := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: fmt.Sprintf("intruder-%d", n)}, Task: fmt.Sprintf("intruder %d", n)}
			if _, err := in.Driver.Append(ctx, store.AppendRequest{Tenant: req.Tenant, SessionID: req.SessionID, Steps: []agentmem.Step{step}}); err != nil {
				return nil, err
			}
		}
	}
	return in.Driver.Append(ctx, req)
}

// TestContendedWrites: a write that states no position and that another
// writer gets ahead of on every try is tried as often as the server's
// policy says, then answered 503 with Retry-After, nothing stored; the
// retries and the give-up are counted by operation. A write with
// If-Match is tried once: its conflict is the answer.
func TestContendedWrites(t *testing.T) {
	const attempts = 4
	var in *intruder
	e := newEnv(t, func(c *Config) {
		in = &intruder{Driver: c.Store}
		c.Store = store.New(in)
		svc, err := sessions.New(sessions.Config{Store: c.Store, Clock: c.Clock,
			Retry: &store.RetryPolicy{Attempts: attempts, Backoff: time.Microsecond, MaxBackoff: time.Microsecond}})
		if err != nil {
			t.Fatal(err)
		}
		c.Sessions = svc
	})
	e.create("s")
	e.must(201, "POST", "/v1/sessions/s/messages", `[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}]`)
	in.on.Store(true)
	for _, w := range []struct{ op, path, body string }{
		{"messages", "/v1/sessions/s/messages", toolResult("c1", "done")},
		{"items", "/v1/sessions/s/items", itemsBody(`{"type":"function_call_output","call_id":"c1","output":"done"}`)},
		{"compact", "/v1/sessions/s/compact", `{"strategy":"keep_last_n","n":1}`},
		{"pop", "/v1/sessions/s/pop", `{}`},
		{"clear", "/v1/sessions/s/clear", ""},
	} {
		method := "POST"
		if w.op == "clear" {
			method, w.path = "DELETE", "/v1/sessions/s/items"
		}
		var body any
		if w.body != "" {
			body = w.body
		}
		writes := in.writes.Load()
		r := e.do(method, w.path, body)
		checkStatus(t, w.op, r, 503, api.CodeUnavailable)
		if n := in.writes.Load() - writes; n != attempts {
			t.Errorf("%s: %d tries, want %d", w.op, n, attempts)
		}
		if got := e.metric(`agentmem_write_retries_total{op="` + w.op + `"}`); got != attempts-1 {
			t.Errorf("%s: agentmem_write_retries_total %v, want %d", w.op, got, attempts-1)
		}
		if got := e.metric(`agentmem_write_contended_total{op="` + w.op + `"}`); got != 1 {
			t.Errorf("%s: agentmem_write_contended_total %v, want 1", w.op, got)
		}
	}
	// Nothing but the intruder's steps was stored: the call is pending,
	// the working set whole.
	var log readSteps
	e.must(200, "GET", "/v1/sessions/s/steps?limit=10000", nil).json(t, &log)
	if len(log.Compactions) != 0 || len(log.Steps) != 2+int(in.steps.Load()) {
		t.Fatalf("the log after refused writes: %d steps (%d the intruder's), %d compactions", len(log.Steps), in.steps.Load(), len(log.Compactions))
	}
	e.wantPending("s", []api.PendingCalls{{Seq: 2, ToolCallIDs: []string{"c1"}}}, "c1")

	// With If-Match, even the current last sequence number, one try: the
	// intruder gets ahead of it, and that is the answer.
	writes := in.writes.Load()
	r := e.do("POST", "/v1/sessions/s/messages", toolResult("c1", "done"), "If-Match", fmt.Sprintf(`"%d"`, log.LastSeq))
	checkStatus(t, "a tool result with If-Match", r, 409, api.CodeConflict)
	if n := in.writes.Load() - writes; n != 1 {
		t.Errorf("a tool result with If-Match: %d tries, want 1", n)
	}
	if got := e.metric(`agentmem_write_retries_total{op="messages"}`); got != attempts-1 {
		t.Errorf("a tool result with If-Match was retried: agentmem_write_retries_total %v", got)
	}

	// Once the session is quiet, the same write succeeds, and the store's
	// error counter never saw any of it.
	in.on.Store(false)
	e.must(201, "POST", "/v1/sessions/s/messages", toolResult("c1", "done"))
	e.wantPending("s", []api.PendingCalls{})
	if got := e.metric(`agentmem_store_errors_total{op="append"}`); got != 0 {
		t.Errorf("agentmem_store_errors_total{op=\"append\"} %v", got)
	}
}
