package server

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/store"
)

// session builds a session of a system prompt, a task and n actions whose
// results are long enough that a small budget drops some.
func (e *env) session(id string, n int) {
	e.t.Helper()
	e.create(id)
	steps := []string{sysStep, taskStep}
	for i := 1; i <= n; i++ {
		steps = append(steps, actionStep(i, strings.Repeat(fmt.Sprintf("line %d of the file\n", i), 20)))
	}
	e.appendSteps(id, "["+strings.Join(steps, ",")+"]")
}

func TestContext(t *testing.T) {
	e := newEnv(t)
	e.session("s", 20)
	var full api.ContextResponse
	r := e.must(200, "GET", "/v1/sessions/s/context", nil)
	r.json(t, &full)
	if full.Format != "openai" || full.Tokenizer != "o200k_base" || full.Budget != 0 || len(full.Steps) != 22 || full.DroppedSteps != 0 || full.LastSeq != 22 {
		t.Errorf("unbudgeted: %+v", full)
	}
	if r.header.Get("ETag") != `"22"` {
		t.Errorf("ETag %q", r.header.Get("ETag"))
	}
	// The messages are the wire form and valid for the API.
	var msgs []render.OpenAIMessage
	raw, _ := json.Marshal(full.Messages)
	if err := json.Unmarshal(raw, &msgs); err != nil || len(msgs) != 2+20*2 {
		t.Fatalf("messages: %v %d", err, len(msgs))
	}
	decoded, err := render.DecodeOpenAIMessages(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := render.Validate("openai", decoded); err != nil {
		t.Error(err)
	}

	budget := full.Tokens / 3
	var small api.ContextResponse
	e.must(200, "GET", fmt.Sprintf("/v1/sessions/s/context?budget=%d", budget), nil).json(t, &small)
	if small.Tokens > budget || small.Budget != budget || small.DroppedSteps == 0 || len(small.Dropped) != 1 ||
		small.Steps[0] != 1 || small.Steps[1] != 2 || small.Steps[len(small.Steps)-1] != 22 {
		t.Errorf("budget %d: tokens %d, steps %v, dropped %+v", budget, small.Tokens, small.Steps, small.Dropped)
	}
	if small.Dropped[0].First != 3 || small.Dropped[0].Count != small.DroppedSteps {
		t.Errorf("dropped %+v", small.Dropped)
	}
	// truncate=true fills the budget with a truncated older step.
	var filled api.ContextResponse
	e.must(200, "GET", fmt.Sprintf("/v1/sessions/s/context?budget=%d&truncate=true", budget), nil).json(t, &filled)
	if len(filled.Truncated) != 1 || filled.Tokens > budget || filled.Tokens < small.Tokens {
		t.Errorf("truncate: %+v (without: %d tokens)", filled.Truncated, small.Tokens)
	}

	// Every format and tokenizer.
	for _, f := range []string{"openai", "anthropic", "observation"} {
		for _, tok := range []string{"o200k_base", "cl100k_base", "heuristic"} {
			var c api.ContextResponse
			e.must(200, "GET", fmt.Sprintf("/v1/sessions/s/context?budget=2000&format=%s&tokenizer=%s", f, tok), nil).json(t, &c)
			if c.Format != f || c.Tokenizer != tok || c.Tokens > 2000 {
				t.Errorf("%s/%s: %s %s %d", f, tok, c.Format, c.Tokenizer, c.Tokens)
			}
			if f == "anthropic" {
				var body render.AnthropicBody
				raw, _ := json.Marshal(c.Messages)
				if err := json.Unmarshal(raw, &body); err != nil || body.System == "" || len(body.Messages) == 0 {
					t.Errorf("anthropic body: %v %s", err, raw)
				}
			}
		}
	}

	// A budget that cannot hold the system prompt and task: 422 with
	// the figure needed.
	r = e.must(422, "GET", "/v1/sessions/s/context?budget=5", nil)
	apiErr := r.apiErr(t)
	if apiErr.Code != api.CodeBudgetTooSmall || apiErr.Required <= 5 || apiErr.Budget != 5 || apiErr.Field != "budget" {
		t.Errorf("too small: %+v", apiErr)
	}
	e.must(200, "GET", fmt.Sprintf("/v1/sessions/s/context?budget=%d", apiErr.Required), nil)

	for _, q := range []string{"budget=-1", "budget=x", "budget=99999999999", "format=xml", "tokenizer=gpt2", "truncate=yes", "budgett=1", "format=openai&format=anthropic"} {
		r := e.do("GET", "/v1/sessions/s/context?"+q, nil)
		if r.code != 400 {
			t.Errorf("%s: %d %s", q, r.code, r.body)
			continue
		}
		if err := r.apiErr(t); err.Field == "" {
			t.Errorf("%s: no field: %+v", q, err)
		}
	}
	e.must(404, "GET", "/v1/sessions/nope/context", nil)
	// An empty session has an empty context.
	e.create("empty")
	var c api.ContextResponse
	r = e.must(200, "GET", "/v1/sessions/empty/context?budget=100", nil)
	r.json(t, &c)
	if len(c.Steps) != 0 || !strings.Contains(string(r.body), `"messages":[]`) {
		t.Errorf("empty: %s", r.body)
	}
}

// TestContextCatchesUp checks the cache against the log: appends made
// behind the server's back (another instance) show in the next context;
// a compaction by another writer rebuilds the cached memory; and steps
// already cached are not counted again.
// TestContextKeepsOversizedNewestStep: when the newest step alone does not
// fit in what the pinned steps leave, the context shows it truncated and
// says so, rather than sending the model none of its actions.
func TestContextKeepsOversizedNewestStep(t *testing.T) {
	e := newEnv(t)
	e.session("s", 3)
	e.appendSteps("s", "["+actionStep(4, strings.Repeat("a huge observation ", 2000))+"]")
	var full api.ContextResponse
	e.must(200, "GET", "/v1/sessions/s/context", nil).json(t, &full)
	newest := full.Steps[len(full.Steps)-1]
	budget := full.Tokens / 10
	r := e.must(200, "GET", fmt.Sprintf("/v1/sessions/s/context?budget=%d", budget), nil)
	var c api.ContextResponse
	r.json(t, &c)
	if !c.NewestTruncated || c.Tokens > budget || c.Steps[len(c.Steps)-1] != newest || len(c.Truncated) != 1 || c.Truncated[0] != newest {
		t.Fatalf("budget %d: newest_truncated %v, tokens %d, steps %v, truncated %v", budget, c.NewestTruncated, c.Tokens, c.Steps, c.Truncated)
	}
	var raw map[string]any
	r.json(t, &raw)
	if raw["newest_truncated"] != true {
		t.Fatalf("body lacks newest_truncated: %v", raw["newest_truncated"])
	}
	if full.NewestTruncated {
		t.Fatal("an unbudgeted context reports a truncated newest step")
	}
}

func TestContextCatchesUp(t *testing.T) {
	e := newEnv(t)
	e.session("s", 3)
	var c api.ContextResponse
	e.must(200, "GET", "/v1/sessions/s/context", nil).json(t, &c)
	if len(c.Steps) != 5 {
		t.Fatalf("steps %v", c.Steps)
	}
	reloads, misses, catchups := e.cacheEvents("reload"), e.cacheEvents("miss"), e.cacheEvents("catchup")

	// Another instance appends.
	ctx := context.Background()
	step := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "other", Time: fixedNow}, Task: "from another instance"}
	if _, err := e.mem.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{step}}); err != nil {
		t.Fatal(err)
	}
	e.must(200, "GET", "/v1/sessions/s/context", nil).json(t, &c)
	if fmt.Sprint(c.Steps) != "[1 2 3 4 5 6]" || c.LastSeq != 6 || !strings.Contains(fmt.Sprint(c.Messages), "from another instance") {
		t.Errorf("after a foreign append: %v last %d", c.Steps, c.LastSeq)
	}
	if e.cacheEvents("reload") != reloads || e.cacheEvents("miss") != misses || e.cacheEvents("catchup") != catchups+1 {
		t.Error("a foreign append rebuilt the memory instead of adding to it")
	}

	// Another instance compacts (through a bound memory of its own).
	b, err := store.OpenMemory(ctx, e.mem, "s", agentmem.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Prune(ctx, agentmem.KeepLastN(1)); err != nil {
		t.Fatal(err)
	}
	e.must(200, "GET", "/v1/sessions/s/context", nil).json(t, &c)
	if fmt.Sprint(c.Steps) != "[1 2 6]" {
		t.Errorf("after a foreign compaction: %v", c.Steps)
	}
	// Deleted and created again under the same ID.
	if err := e.mem.Delete(ctx, "", "s"); err != nil {
		t.Fatal(err)
	}
	e.store.setFail(nil)
	if _, err := e.mem.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	e.appendSteps("s", `{"type":"task","task":"a new life"}`)
	e.must(200, "GET", "/v1/sessions/s/context", nil).json(t, &c)
	if fmt.Sprint(c.Steps) != "[1]" || !strings.Contains(fmt.Sprint(c.Messages), "a new life") {
		t.Errorf("re-created: %v %v", c.Steps, c.Messages)
	}
}

// TestContextStoreCalls checks the cost of a cached context: one Get
// when nothing is new or when what is new was appended through the
// service (which adds it to the cached memory as it writes it); a Get and
// a read of the new entries when another writer appended them.
func TestContextStoreCalls(t *testing.T) {
	e := newEnv(t)
	e.session("s", 10)
	e.must(200, "GET", "/v1/sessions/s/context?budget=1000", nil)
	reads, gets := e.store.reads.Load(), e.store.gets.Load()
	for range 5 {
		e.must(200, "GET", "/v1/sessions/s/context?budget=1000", nil)
	}
	if r, g := e.store.reads.Load()-reads, e.store.gets.Load()-gets; r != 0 || g != 5 {
		t.Errorf("%d reads and %d gets for 5 cached contexts", r, g)
	}
	appends := e.cacheEvents("append")
	e.appendSteps("s", actionStep(99, "new"))
	reads, gets = e.store.reads.Load(), e.store.gets.Load()
	var c api.ContextResponse
	e.must(200, "GET", "/v1/sessions/s/context?budget=1000", nil).json(t, &c)
	if r, g := e.store.reads.Load()-reads, e.store.gets.Load()-gets; r != 0 || g != 1 || c.LastSeq != 13 {
		t.Errorf("%d reads and %d gets after an append through the service (last %d)", r, g, c.LastSeq)
	}
	if e.cacheEvents("append") != appends+1 {
		t.Error("the append did not reach the cached memory")
	}
	// The context is the one the log gives.
	e.srv.svc.DropCache()
	var fresh api.ContextResponse
	e.must(200, "GET", "/v1/sessions/s/context?budget=1000", nil).json(t, &fresh)
	if !reflect.DeepEqual(c, fresh) {
		t.Errorf("the context after the append:\n%+v\nread from the log:\n%+v", c, fresh)
	}

	ctx := context.Background()
	step := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "other", Time: fixedNow}, Task: "from another instance"}
	if _, err := e.mem.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{step}}); err != nil {
		t.Fatal(err)
	}
	reads, gets = e.store.reads.Load(), e.store.gets.Load()
	e.must(200, "GET", "/v1/sessions/s/context?budget=1000", nil).json(t, &c)
	if r, g := e.store.reads.Load()-reads, e.store.gets.Load()-gets; r != 1 || g != 1 || c.LastSeq != 14 {
		t.Errorf("%d reads and %d gets to catch up with another writer's step (last %d)", r, g, c.LastSeq)
	}
}

// TestConcurrentAppendsAndContexts runs appends and context reads on the
// same sessions at once (run it with -race): every acknowledged step is
// in the log once, the numbers are contiguous, and a context read after
// the appends shows the newest.
func TestConcurrentAppendsAndContexts(t *testing.T) {
	e := newEnv(t)
	for _, id := range []string{"a", "b"} {
		e.create(id)
		e.appendSteps(id, "["+sysStep+","+taskStep+"]")
	}
	const writers, perWriter = 8, 10
	var wg sync.WaitGroup
	errs := make(chan string, writers*perWriter*2)
	for w := range writers {
		wg.Add(2)
		id := []string{"a", "b"}[w%2]
		go func() {
			defer wg.Done()
			for i := range perWriter {
				key := fmt.Sprintf("w%d-%d", w, i)
				body := actionStep(w*100+i, "result "+key)
				// Retry on a lost race, as a client would.
				for {
					r := e.do("POST", "/v1/sessions/"+id+"/steps", body, "Idempotency-Key", key)
					if r.code == 201 {
						break
					}
					if r.code != 409 {
						errs <- fmt.Sprintf("append: %d %s", r.code, r.body)
						return
					}
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range perWriter {
				r := e.do("GET", "/v1/sessions/"+id+"/context?budget=3000&format=anthropic", nil)
				if r.code != 200 {
					errs <- fmt.Sprintf("context: %d %s", r.code, r.body)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, id := range []string{"a", "b"} {
		var rs readSteps
		e.must(200, "GET", "/v1/sessions/"+id+"/steps?limit=10000", nil).json(t, &rs)
		want := 2 + writers/2*perWriter
		if len(rs.Steps) != want || rs.LastSeq != int64(want) {
			t.Errorf("%s: %d steps, last %d, want %d", id, len(rs.Steps), rs.LastSeq, want)
		}
		seen := map[string]bool{}
		for i, s := range rs.Steps {
			if s.Info().Number != i+1 || seen[s.Info().ID] {
				t.Errorf("%s: step %d is %d %q", id, i, s.Info().Number, s.Info().ID)
			}
			seen[s.Info().ID] = true
		}
		var c api.ContextResponse
		e.must(200, "GET", "/v1/sessions/"+id+"/context", nil).json(t, &c)
		if len(c.Steps) != want || c.LastSeq != int64(want) {
			t.Errorf("%s: context shows %d steps, last %d", id, len(c.Steps), c.LastSeq)
		}
	}
}

// TestContextWithoutBudgetIsCapped checks the server's maximum context: a
// request without a budget on a long session is fitted to it (rendering
// only the steps that fit, not the whole session) and says what it left
// out; a larger budget is refused.
func TestContextWithoutBudgetIsCapped(t *testing.T) {
	const maxTokens = 2000
	e := newEnv(t, func(c *Config) { c.MaxContextTokens = maxTokens })
	e.create("long")
	var sessionBytes int
	for batch := range 10 {
		var steps []string
		for i := range 100 {
			n := batch*100 + i
			steps = append(steps, actionStep(n, strings.Repeat(fmt.Sprintf("line %d of a long file\n", n), 40)))
			sessionBytes += len(steps[len(steps)-1])
		}
		if batch == 0 {
			steps = append([]string{sysStep, taskStep}, steps...)
		}
		e.appendSteps("long", "["+strings.Join(steps, ",")+"]")
	}
	e.must(200, "GET", "/v1/sessions/long/context?budget=1000", nil) // load the cache
	// TotalAlloc counts the whole process's allocations, and a request
	// may refill pools a collection emptied: the least of a few requests
	// is the request's own.
	var r *response
	alloc := uint64(math.MaxUint64)
	for range 5 {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		r = e.must(200, "GET", "/v1/sessions/long/context?format=observation", nil)
		runtime.ReadMemStats(&m1)
		alloc = min(alloc, m1.TotalAlloc-m0.TotalAlloc)
	}
	var c api.ContextResponse
	r.json(t, &c)
	if c.Budget != 0 || c.MaxContextTokens != maxTokens || c.Tokens > maxTokens || c.LastSeq != 1002 {
		t.Errorf("no budget: budget %d, max %d, tokens %d, last %d", c.Budget, c.MaxContextTokens, c.Tokens, c.LastSeq)
	}
	// The pinned steps, then the newest that fit; the rest is reported.
	shown := len(c.Steps)
	if shown < 4 || c.Steps[0] != 1 || c.Steps[1] != 2 || c.Steps[shown-1] != 1002 || c.DroppedSteps != 1002-shown ||
		len(c.Dropped) != 1 || c.Dropped[0] != (api.DroppedRun{First: 3, Last: 1002 - shown + 2, Count: 1002 - shown}) {
		t.Errorf("no budget: steps %v, dropped %+v (%d)", c.Steps, c.Dropped, c.DroppedSteps)
	}
	if len(r.body) > sessionBytes/20 {
		t.Errorf("the capped context is %d bytes, of a session of %d", len(r.body), sessionBytes)
	}
	// Rendering the whole session in the observation format would copy
	// its text; fitting renders only the steps that fit.
	if alloc > uint64(sessionBytes)/4 {
		t.Errorf("a capped context allocated %d bytes, for a session of %d", alloc, sessionBytes)
	}
	// Without a budget is the same as a budget of the maximum.
	var b api.ContextResponse
	e.must(200, "GET", "/v1/sessions/long/context?format=observation&budget=2000", nil).json(t, &b)
	if fmt.Sprint(b.Steps) != fmt.Sprint(c.Steps) || b.Tokens != c.Tokens || b.Budget != maxTokens {
		t.Errorf("budget = max: steps %v tokens %d; without a budget: %v %d", b.Steps, b.Tokens, c.Steps, c.Tokens)
	}
	// A larger budget is refused, saying why.
	ae := e.must(400, "GET", "/v1/sessions/long/context?budget=2001", nil).apiErr(t)
	if ae.Code != api.CodeInvalid || ae.Field != "budget" || !strings.Contains(ae.Message, "maximum context of 2000 tokens") {
		t.Errorf("budget over the maximum: %+v", ae)
	}
	// Pinned steps larger than the maximum: the usual 422, naming it.
	e.create("huge")
	e.appendSteps("huge", `{"type":"system_prompt","content":`+quote(strings.Repeat("rule number one. ", 2000))+`}`)
	ae = e.must(422, "GET", "/v1/sessions/huge/context", nil).apiErr(t)
	if ae.Code != api.CodeBudgetTooSmall || ae.Budget != maxTokens || ae.Required <= maxTokens {
		t.Errorf("pinned steps over the maximum: %+v", ae)
	}
}

// TestResponseEscaping checks that responses escape as encoding/json does
// with SetEscapeHTML(false): HTML's characters as they are, U+2028 and
// U+2029 escaped (TestMain compares every response with encoding/json's
// too). (Members that are JSON already, such as the steps route's steps
// or the Anthropic messages, are written as they were encoded.)
func TestResponseEscaping(t *testing.T) {
	e := newEnv(t)
	e.create("s")
	e.appendSteps("s", `{"type":"task","task":"<b>a & b</b>\u2028\u2029 \"q\" \\ \u0007"}`)
	for _, path := range []string{"/v1/sessions/s/context"} {
		body := string(e.must(200, "GET", path, nil).body)
		if !strings.Contains(body, `<b>a & b</b>\u2028\u2029 \"q\" \\ \u0007`) {
			t.Errorf("%s: %s", path, body)
		}
	}
}
