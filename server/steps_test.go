package server

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/store"
)

func TestAppendStepsAndRead(t *testing.T) {
	e := newEnv(t)
	e.create("s")
	// One step.
	r := e.must(201, "POST", "/v1/sessions/s/steps", sysStep)
	var one api.AppendResponse
	r.json(t, &one)
	if fmt.Sprint(one.Seqs) != "[1]" || one.LastSeq != 1 || r.header.Get("ETag") != `"1"` {
		t.Errorf("one step: %+v %v", one, r.header)
	}
	// A list; numbers in the body are ignored.
	list := e.appendSteps("s", `[`+taskStep+`,{"type":"planning","number":77,"plan":"read, fix, test"},`+actionStep(1, "contents")+`]`)
	if fmt.Sprint(list.Seqs) != "[2 3 4]" || list.LastSeq != 4 {
		t.Errorf("list: %+v", list)
	}
	var rs readSteps
	e.must(200, "GET", "/v1/sessions/s/steps", nil).json(t, &rs)
	if len(rs.Steps) != 4 || rs.LastSeq != 4 {
		t.Fatalf("read: %d steps, last %d", len(rs.Steps), rs.LastSeq)
	}
	for i, s := range rs.Steps {
		if s.Info().Number != i+1 || s.Info().ID == "" || !s.Info().Time.Equal(fixedNow) {
			t.Errorf("step %d: %+v", i, s.Info())
		}
	}
	if p, ok := rs.Steps[2].(*agentmem.PlanningStep); !ok || p.Plan != "read, fix, test" {
		t.Errorf("planning step: %#v", rs.Steps[2])
	}
	e.must(200, "GET", "/v1/sessions/s/steps?after=2&limit=1", nil).json(t, &rs)
	if len(rs.Steps) != 1 || rs.Steps[0].Info().Number != 3 {
		t.Errorf("after=2&limit=1: %v", rs.Steps)
	}
	e.must(200, "GET", "/v1/sessions/s/steps?last=2", nil).json(t, &rs)
	if len(rs.Steps) != 2 || rs.Steps[0].Info().Number != 3 || rs.Steps[1].Info().Number != 4 {
		t.Errorf("last=2: %v", rs.Steps)
	}
	e.must(200, "GET", "/v1/sessions/s/steps?after=4", nil).json(t, &rs)
	if len(rs.Steps) != 0 || !strings.Contains(string(e.must(200, "GET", "/v1/sessions/s/steps?after=4", nil).body), `"steps":[]`) {
		t.Errorf("after=4: %v", rs.Steps)
	}
	for _, q := range []string{"after=-1", "limit=0", "limit=x", "last=10001", "limit=1&last=1", "afterr=1"} {
		if r := e.do("GET", "/v1/sessions/s/steps?"+q, nil); r.code != 400 {
			t.Errorf("%s: %d", q, r.code)
		}
	}
	e.must(404, "GET", "/v1/sessions/none/steps", nil)
	e.must(404, "POST", "/v1/sessions/none/steps", taskStep)
}

func TestAppendIdempotencyKey(t *testing.T) {
	e := newEnv(t)
	e.create("s")
	first := e.appendSteps("s", taskStep, "Idempotency-Key", "turn-1")
	again := e.appendSteps("s", taskStep, "Idempotency-Key", "turn-1")
	if fmt.Sprint(first.Seqs) != "[1]" || fmt.Sprint(again.Seqs) != "[1]" || again.LastSeq != 1 {
		t.Errorf("retry of one step: %+v then %+v", first, again)
	}
	body := "[" + actionStep(1, "a") + "," + actionStep(2, "b") + "]"
	first = e.appendSteps("s", body, "Idempotency-Key", "turn-2")
	again = e.appendSteps("s", body, "Idempotency-Key", "turn-2")
	if fmt.Sprint(first.Seqs) != "[2 3]" || fmt.Sprint(again.Seqs) != "[2 3]" || again.LastSeq != 3 {
		t.Errorf("retry of a list: %+v then %+v", first, again)
	}
	var rs readSteps
	e.must(200, "GET", "/v1/sessions/s/steps", nil).json(t, &rs)
	var ids []string
	for _, s := range rs.Steps {
		ids = append(ids, s.Info().ID)
	}
	if strings.Join(ids, " ") != "turn-1/0 turn-2/0 turn-2/1" {
		t.Errorf("IDs %v", ids)
	}
	// A step's own ID wins over the key.
	e.appendSteps("s", `{"type":"task","id":"mine","task":"x"}`, "Idempotency-Key", "k")
	e.must(200, "GET", "/v1/sessions/s/steps?last=1", nil).json(t, &rs)
	if rs.Steps[0].Info().ID != "mine" {
		t.Errorf("own ID: %q", rs.Steps[0].Info().ID)
	}
	for _, key := range []string{strings.Repeat("k", 101), "with space", "tab\t", "é"} {
		if r := e.do("POST", "/v1/sessions/s/steps", taskStep, "Idempotency-Key", key); r.code != 400 || r.apiErr(t).Field != "Idempotency-Key" {
			t.Errorf("key %q: %d %s", key, r.code, r.body)
		}
	}
}

func TestAppendIfMatch(t *testing.T) {
	e := newEnv(t)
	e.create("s")
	e.appendSteps("s", taskStep, "If-Match", `"0"`)
	e.appendSteps("s", actionStep(1, "x"), "If-Match", `1`)
	e.appendSteps("s", actionStep(2, "y"), "If-Match", `W/"2"`)
	before := e.dump()
	r := e.must(409, "POST", "/v1/sessions/s/steps", actionStep(3, "z"), "If-Match", `"1"`)
	err := r.apiErr(t)
	if err.Code != api.CodeConflict || err.LastSeq == nil || *err.LastSeq != 3 || r.header.Get("ETag") != `"3"` || err.Field != "If-Match" {
		t.Errorf("conflict: %+v %v", err, r.header)
	}
	if e.dump() != before {
		t.Error("a conflicting append changed the store")
	}
	for _, h := range []string{"x", "-1", `"`, `"1`, "1.0", "01", "W/x", " ", `" "`, `W/""`, `""`} {
		if r := e.do("POST", "/v1/sessions/s/steps", actionStep(4, "w"), "If-Match", h); r.code != 400 || r.apiErr(t).Field != "If-Match" {
			t.Errorf("If-Match %q: %d %s", h, r.code, r.body)
		}
	}
	// Headers that are there but empty, or given twice, are refused too
	// (as a server reading the wire sees an If-Match of spaces).
	for _, c := range []struct {
		name   string
		values []string
	}{
		{"If-Match", []string{""}},
		{"If-Match", []string{"3", "3"}},
		{"Idempotency-Key", []string{""}},
		{"Idempotency-Key", []string{"a", "b"}},
	} {
		req := httptest.NewRequest("POST", "/v1/sessions/s/steps", strings.NewReader(actionStep(4, "w")))
		req.Header.Set("Content-Type", "application/json")
		req.Header[c.name] = c.values
		rec := httptest.NewRecorder()
		e.srv.ServeHTTP(rec, req)
		r := &response{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
		if r.code != 400 || r.apiErr(t).Field != c.name {
			t.Errorf("%s %q: %d %s", c.name, c.values, r.code, r.body)
		}
	}
	if e.dump() != before {
		t.Error("a bad If-Match changed the store")
	}
	// A retry of steps already stored succeeds whatever If-Match says.
	e.appendSteps("s", `{"type":"task","id":"t","task":"x"}`, "If-Match", `"3"`)
	again := e.appendSteps("s", `{"type":"task","id":"t","task":"x"}`, "If-Match", `"3"`)
	if fmt.Sprint(again.Seqs) != "[4]" {
		t.Errorf("retry: %+v", again)
	}
}

// TestAppendBadInput sends the bad-input corpus to the steps route and
// checks each is refused with a 4xx and changes nothing.
func TestAppendBadInput(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxBodyBytes = 64 << 10 })
	e.create("s")
	e.appendSteps("s", sysStep)
	before := e.dump()
	huge := `{"type":"task","task":"` + strings.Repeat("a", 70<<10) + `"}`
	labels := make([]string, store.MaxMetadataKeys+1)
	for i := range labels {
		labels[i] = fmt.Sprintf(`"k%d":"v"`, i)
	}
	tooManyLabels := `{"type":"task","task":"t","metadata":{` + strings.Join(labels, ",") + `}}`
	sessionLabels := `{"metadata":{` + strings.Join(labels, ",") + `}}`
	for _, c := range []struct {
		name  string
		body  any
		code  int
		field string
		hdr   []string
	}{
		{"malformed", `{"type":"task",`, 400, "", nil},
		{"truncated array", `[` + taskStep, 400, "", nil},
		{"not json", `hello`, 400, "", nil},
		{"a number", `42`, 400, "", nil},
		{"null", `null`, 400, "", nil},
		{"empty body", ``, 400, "", nil},
		{"blank body", "  \n", 400, "", nil},
		{"empty list", `[]`, 400, "steps", nil},
		{"wrong type", `{"type":"task","task":7}`, 400, "", nil},
		{"type not a string", `{"type":1,"task":"x"}`, 400, "", nil},
		{"unknown step type", `{"type":"thought","content":"x"}`, 400, "type", nil},
		{"missing type", `{"task":"x"}`, 400, "type", nil},
		{"unknown field", `{"type":"task","task":"x","prio":1}`, 400, "", nil},
		{"orphan tool result", `{"type":"action","results":[{"call_id":"c9","content":"x"}]}`, 400, "results[0].call_id", nil},
		{"bad step in list", `[` + taskStep + `,{"type":"nope"}]`, 400, "steps[1].type", nil},
		{"duplicate IDs", `[{"type":"task","id":"a","task":"x"},{"type":"task","id":"a","task":"y"}]`, 400, "steps[1].id", nil},
		{"too much metadata", tooManyLabels, 400, "steps[0].metadata", nil},
		{"a task without its task", `{"type":"task","id":"t1"}`, 400, "task", nil},
		{"invalid UTF-8", []byte("{\"type\":\"task\",\"task\":\"\xff\xfe\"}"), 400, "", nil},
		{"invalid UTF-8 escape", `{"type":"task","task":"\ud800"}`, 400, "", nil},
		{"huge body", huge, 413, "", nil},
		{"text/plain", taskStep, 415, "Content-Type", []string{"Content-Type", "text/plain"}},
		{"form", taskStep, 415, "Content-Type", []string{"Content-Type", "application/x-www-form-urlencoded"}},
		{"no content type", taskStep, 415, "Content-Type", []string{"Content-Type", ""}},
		{"latin-1", taskStep, 415, "Content-Type", []string{"Content-Type", "application/json; charset=latin1"}},
		{"too many steps", "[" + strings.Repeat(taskStep+",", api.MaxStepsPerRequest) + taskStep + "]", 400, "steps", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("POST", "/v1/sessions/s/steps", c.body, c.hdr...)
			if c.name == "too many steps" && r.code == 413 {
				return // the body limit got there first; also a refusal
			}
			if r.code != c.code {
				t.Fatalf("status %d, want %d: %s", r.code, c.code, r.body)
			}
			err := r.apiErr(t)
			if c.field != "" && err.Field != c.field {
				t.Errorf("field %q, want %q (%s)", err.Field, c.field, err.Message)
			}
			if e.dump() != before {
				t.Fatal("the store changed")
			}
		})
	}
	// Sessions have as many labels at most as steps.
	if r := e.must(400, "POST", "/v1/sessions", sessionLabels); r.apiErr(t).Field != "metadata" {
		t.Errorf("a session with too many labels: %s", r.body)
	}
	// The charset parameter may say UTF-8.
	e.appendSteps("s", taskStep, "Content-Type", "application/json; charset=UTF-8")
	// Escaped surrogate pairs and escaped backslashes are fine.
	e.appendSteps("s", `{"type":"task","task":"smile \ud83d\ude00, path C:\\ud800"}`)
	var rs readSteps
	e.must(200, "GET", "/v1/sessions/s/steps?last=1", nil).json(t, &rs)
	if got := rs.Steps[0].(*agentmem.TaskStep).Task; got != `smile 😀, path C:\ud800` {
		t.Errorf("escapes: %q", got)
	}
}

func TestAppendMessages(t *testing.T) {
	e := newEnv(t)
	e.create("s")
	turn := `[
		{"role":"system","content":"You are a coding agent."},
		{"role":"user","content":"List the files."},
		{"role":"assistant","content":null,"tool_calls":[
			{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}},
			{"id":"c2","type":"function","function":{"name":"pwd","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c2","content":"/src"},
		{"role":"tool","tool_call_id":"c1","content":"a.go b.go"},
		{"role":"assistant","content":"There are two files."}
	]`
	out := e.must(201, "POST", "/v1/sessions/s/messages", turn, "Idempotency-Key", "t1")
	var ar api.AppendResponse
	out.json(t, &ar)
	if fmt.Sprint(ar.Seqs) != "[1 2 3 4]" || ar.LastSeq != 4 || out.header.Get("ETag") != `"4"` {
		t.Fatalf("append: %+v", ar)
	}
	// A retry stores nothing twice.
	e.must(201, "POST", "/v1/sessions/s/messages", turn, "Idempotency-Key", "t1").json(t, &ar)
	if fmt.Sprint(ar.Seqs) != "[1 2 3 4]" || ar.LastSeq != 4 {
		t.Fatalf("retry: %+v", ar)
	}
	var rs readSteps
	e.must(200, "GET", "/v1/sessions/s/steps", nil).json(t, &rs)
	kinds := ""
	for _, s := range rs.Steps {
		kinds += string(s.Kind()) + "/" + s.Info().ID + " "
	}
	if kinds != "system_prompt/t1/0 task/t1/1 action/t1/2 action/t1/3 " {
		t.Errorf("steps: %s", kinds)
	}
	a := rs.Steps[2].(*agentmem.ActionStep)
	if len(a.Results) != 2 || a.Results[0].CallID != "c1" || a.Results[0].Content != "a.go b.go" || a.Results[1].Content != "/src" {
		t.Errorf("results in call order: %+v", a.Results)
	}
	// One message object is a list of one.
	e.must(201, "POST", "/v1/sessions/s/messages", `{"role":"user","content":[{"type":"text","text":"thanks"}]}`).json(t, &ar)
	if fmt.Sprint(ar.Seqs) != "[5]" {
		t.Errorf("single message: %+v", ar)
	}

	before := e.dump()
	// A tool message whose call nobody made: 400, nothing stored.
	r := e.must(400, "POST", "/v1/sessions/s/messages", `{"role":"tool","tool_call_id":"c3","content":"x"}`)
	if err := r.apiErr(t); err.Field != "tool_call_id" || !strings.Contains(err.Message, `"c3"`) {
		t.Errorf("orphan: %+v", err)
	}
	if e.dump() != before {
		t.Fatal("an orphan tool result changed the store")
	}
	// With flush_pending, calls left without a result are recorded as
	// failed.
	pending := `[{"role":"user","content":"again"},{"role":"assistant","tool_calls":[{"id":"c3","type":"function","function":{"name":"ls","arguments":"{}"}}]}]`
	e.must(201, "POST", "/v1/sessions/s/messages?flush_pending=true", pending).json(t, &ar)
	if fmt.Sprint(ar.Seqs) != "[6 7]" {
		t.Errorf("flushed: %+v", ar)
	}
	e.must(200, "GET", "/v1/sessions/s/steps?last=1", nil).json(t, &rs)
	if a := rs.Steps[0].(*agentmem.ActionStep); len(a.Results) != 1 || !a.Results[0].IsError || a.Results[0].Content != agentmem.MissingResult {
		t.Errorf("flushed action: %+v", rs.Steps[0])
	}
	// Without it, they are stored pending (see pending_test.go), and a
	// message that comes before their results leaves them pending.
	e.must(201, "POST", "/v1/sessions/s/messages", `[{"role":"assistant","tool_calls":[{"id":"c4","type":"function","function":{"name":"ls","arguments":"{}"}}]},{"role":"user","content":"stop"}]`).json(t, &ar)
	if fmt.Sprint(ar.Seqs) != "[8 9]" {
		t.Errorf("interrupted: %+v", ar)
	}
	e.must(200, "GET", "/v1/sessions/s/steps?after=7&limit=1", nil).json(t, &rs)
	if a := rs.Steps[0].(*agentmem.ActionStep); !a.Pending() {
		t.Errorf("the call before the user message: %+v", a)
	}
}

func TestAppendMessagesBadInput(t *testing.T) {
	e := newEnv(t)
	e.create("s")
	before := e.dump()
	for _, c := range []struct {
		name, body, field string
		code              int
	}{
		{"malformed", `[{"role":"user",`, "messages", 400},
		{"empty list", `[]`, "messages", 400},
		{"unknown role", `{"role":"robot","content":"x"}`, "role", 400},
		{"wrong type", `{"role":"user","content":5}`, "content", 400},
		{"unknown field", `{"role":"user","content":"x","mood":"happy"}`, "mood", 400},
		{"orphan tool result", `[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c1","content":"r"}]`, "messages[1].tool_call_id", 400},
		{"wrong call", `[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c2","content":"r"}]`, "messages[1].tool_call_id", 400},
		{"two results", `[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"tool","tool_call_id":"c1","content":"other"}]`, "messages[2].content", 409},
		{"one call ID twice in a message", `{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c1","type":"function","function":{"name":"g","arguments":"{}"}}]}`, "tool_calls[1].id", 400},
		{"one call ID pending twice", `[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"g","arguments":"{}"}}]}]`, "messages[1].tool_calls[0].id", 400},
		{"bad flag", `{"role":"user","content":"x"}`, "flush_pending", 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := "/v1/sessions/s/messages"
			if c.name == "bad flag" {
				path += "?flush_pending=maybe"
			}
			r := e.do("POST", path, c.body)
			if r.code != c.code {
				t.Fatalf("status %d, want %d: %s", r.code, c.code, r.body)
			}
			if err := r.apiErr(t); err.Field != c.field {
				t.Errorf("field %q, want %q (%s)", err.Field, c.field, err.Message)
			}
			if e.dump() != before {
				t.Fatal("the store changed")
			}
		})
	}
	r := e.do("POST", "/v1/sessions/s/messages", []byte("{\"role\":\"user\",\"content\":\"\xc3\x28\"}"))
	if r.code != 400 {
		t.Errorf("invalid UTF-8: %d", r.code)
	}
	if e.dump() != before {
		t.Fatal("the store changed")
	}
}

// The envelope body appends steps and a compaction record in one atomic
// write, as a bound memory's prune or summary does over the Go client.
func TestAppendCompaction(t *testing.T) {
	e := newEnv(t)
	e.create("s")
	e.appendSteps("s", "["+sysStep+","+taskStep+","+actionStep(1, "a")+","+actionStep(2, "b")+"]")
	var ctx api.ContextResponse
	e.must(200, "GET", "/v1/sessions/s/context", nil).json(t, &ctx) // cached now

	// A summary step and a compaction that keeps 1, 2 and the summary
	// (by its placeholder, -1 for steps[0]) in place of 3 and 4.
	summary := `{"type":"summary","summary":"Read two files.","covers":[{"from":3,"to":4}]}`
	var ar api.AppendResponse
	e.must(201, "POST", "/v1/sessions/s/steps", `{"steps":[`+summary+`],"compaction":{"working":[1,2,-1],"removed":[3,4]}}`).json(t, &ar)
	if fmt.Sprint(ar.Seqs) != "[5]" || ar.CompactionSeq != 6 || ar.LastSeq != 6 {
		t.Fatalf("append with compaction: %+v", ar)
	}
	var rs readSteps
	e.must(200, "GET", "/v1/sessions/s/steps", nil).json(t, &rs)
	if len(rs.Compactions) != 1 || rs.Compactions[0].Working == nil || fmt.Sprint(*rs.Compactions[0].Working) != "[1 2 5]" || fmt.Sprint(rs.Compactions[0].Removed) != "[3 4]" || rs.Compactions[0].Amend {
		t.Fatalf("the compaction entry: %+v", rs.Compactions)
	}
	e.must(200, "GET", "/v1/sessions/s/context", nil).json(t, &ctx)
	if fmt.Sprint(ctx.Steps) != "[1 2 5]" {
		t.Errorf("the context after the compaction: %v", ctx.Steps)
	}
	// A compaction alone.
	e.must(201, "POST", "/v1/sessions/s/steps", `{"compaction":{"working":[1,2]}}`).json(t, &ar)
	if len(ar.Seqs) != 0 || ar.CompactionSeq != 7 {
		t.Errorf("a compaction alone: %+v", ar)
	}
	e.must(200, "GET", "/v1/sessions/s/context", nil).json(t, &ctx)
	if fmt.Sprint(ctx.Steps) != "[1 2]" {
		t.Errorf("the context after the second compaction: %v", ctx.Steps)
	}

	// Bad envelopes change nothing.
	before := e.dump()
	for _, c := range []struct{ body, field string }{
		{`{"steps":[]}`, "steps"},
		{`{"compaction":null}`, "steps"},
		{`{"steps":[` + taskStep + `],"extra":1}`, ""},
		{`{"compaction":{"working":[99]}}`, "compaction"},
		{`{"compaction":{"working":[1],"bogus":true}}`, "compaction"},
		{`{"compaction":{"working":[-2]},"steps":[` + taskStep + `]}`, "compaction"},
		{`{"compaction":"1,2"}`, "compaction"},
		{`{"steps":[{"type":"nope"}],"compaction":{"working":[1]}}`, "steps"},
	} {
		r := e.do("POST", "/v1/sessions/s/steps", c.body)
		if r.code != 400 || !strings.Contains(string(r.body), `"field":"`+c.field) {
			t.Errorf("%s: %d %s", c.body, r.code, r.body)
		}
	}
	if after := e.dump(); after != before {
		t.Errorf("bad envelopes changed the store:\n%s\n%s", before, after)
	}
}

// TestAppendAmendment: POST /steps takes an amendment, a compaction record
// that keeps the working set and replaces steps of it by copies; GET
// /steps returns it as sent; one whose copy does not stand in for a step
// of the working set is refused with 400 and changes nothing.
func TestAppendAmendment(t *testing.T) {
	e := newEnv(t)
	e.create("s")
	e.must(201, "POST", "/v1/sessions/s/steps", "["+sysStep+","+taskStep+","+actionStep(1, "output of step 1")+"]", "Idempotency-Key", "k")
	shorter := `{"type":"action","number":3,"id":"k/2","tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{}"}}],"results":[{"call_id":"c1","content":"short"}]}`
	var ar api.AppendResponse
	e.must(201, "POST", "/v1/sessions/s/steps", `{"compaction":{"amend":true,"replaced":[`+shorter+`]}}`).json(t, &ar)
	if len(ar.Seqs) != 0 || ar.CompactionSeq != 4 || ar.LastSeq != 4 {
		t.Fatalf("append of an amendment: %+v", ar)
	}
	var rs readSteps
	e.must(200, "GET", "/v1/sessions/s/steps", nil).json(t, &rs)
	if len(rs.Compactions) != 1 || !rs.Compactions[0].Amend || rs.Compactions[0].Working != nil || len(rs.Compactions[0].Replaced) != 1 {
		t.Fatalf("the amendment as read: %+v", rs.Compactions)
	}
	var c wireContext
	e.must(200, "GET", "/v1/sessions/s/context", nil).json(t, &c)
	if !strings.Contains(string(c.Messages), `"short"`) || strings.Contains(string(c.Messages), "output of step 1") {
		t.Fatalf("the context does not show the amended step: %s", c.Messages)
	}
	before := e.logOf("s")
	for body, field := range map[string]string{
		`{"compaction":{"amend":true,"replaced":[` + strings.Replace(shorter, `"number":3`, `"number":4`, 1) + `]}}`: "compaction.replaced[0].number",
		`{"compaction":{"amend":true,"replaced":[` + strings.Replace(shorter, `"id":"k/2"`, `"id":"k/9"`, 1) + `]}}`: "compaction.replaced[0]",
		`{"compaction":{"amend":true,"working":[1,2,3],"replaced":[` + shorter + `]}}`:                               "compaction.working",
		`{"compaction":{"amend":true}}`: "compaction.replaced",
	} {
		if err := e.must(400, "POST", "/v1/sessions/s/steps", body).apiErr(t); err.Field != field {
			t.Errorf("%s: %+v, want field %s", body, err, field)
		}
	}
	if e.logOf("s") != before {
		t.Fatal("refused amendments changed the log")
	}
}

// TestAppendIdempotencyKeyReused: the same Idempotency-Key with the same
// body is a retry, whatever time the server stamps; with a different body
// it is 409 idempotency_key_reused and nothing is stored.
func TestAppendIdempotencyKeyReused(t *testing.T) {
	var tick atomic.Int64 // the server's clock moves at every reading
	e := newEnv(t, func(c *Config) {
		c.Clock = func() time.Time { return fixedNow.Add(time.Duration(tick.Add(1)) * time.Second) }
	})
	e.create("s")
	list := "[" + actionStep(1, "a") + "," + actionStep(2, "b") + "]"
	turn := `[{"role":"user","content":"List the files."},{"role":"assistant","content":"a.go"}]`
	e.appendSteps("s", taskStep, "Idempotency-Key", "one")
	e.appendSteps("s", list, "Idempotency-Key", "two")
	e.must(201, "POST", "/v1/sessions/s/messages", turn, "Idempotency-Key", "three")
	e.appendSteps("s", `{"type":"task","id":"mine","task":"x"}`)

	// Retries of the same bodies answer the original seqs (the steps
	// got another time from the server's clock: it does not count).
	for _, c := range []struct{ path, body, key, seqs string }{
		{"steps", taskStep, "one", "[1]"},
		{"steps", list, "two", "[2 3]"},
		{"messages", turn, "three", "[4 5]"},
		{"steps", `{"type":"task","id":"mine","task":"x"}`, "", "[6]"},
	} {
		var ar api.AppendResponse
		e.must(201, "POST", "/v1/sessions/s/"+c.path, c.body, "Idempotency-Key", c.key).json(t, &ar)
		if fmt.Sprint(ar.Seqs) != c.seqs || ar.LastSeq != 6 {
			t.Errorf("retry of %s with key %q: %+v, want seqs %s", c.path, c.key, ar, c.seqs)
		}
	}

	before := e.dump()
	var rs readSteps
	e.must(200, "GET", "/v1/sessions/s/steps", nil).json(t, &rs)
	for _, c := range []struct{ path, body, key, field string }{
		{"steps", `{"type":"task","task":"Another task."}`, "one", "Idempotency-Key"},
		{"steps", "[" + actionStep(1, "a") + "," + actionStep(2, "changed") + "]", "two", "Idempotency-Key"},
		{"steps", "[" + actionStep(1, "a") + "," + actionStep(2, "b") + "," + actionStep(3, "c") + "]", "two", "Idempotency-Key"},
		{"messages", `[{"role":"user","content":"List the files."},{"role":"assistant","content":"b.go"}]`, "three", "Idempotency-Key"},
		{"messages", strings.TrimSuffix(turn, "]") + `,{"role":"user","content":"Thanks."}]`, "three", "Idempotency-Key"},
		{"steps", `{"type":"task","id":"mine","task":"y"}`, "", "id"},
		{"steps", `[` + taskStep + `,{"type":"task","id":"mine","task":"y"}]`, "", "steps[1].id"},
	} {
		r := e.do("POST", "/v1/sessions/s/"+c.path, c.body, "Idempotency-Key", c.key)
		if r.code != 409 {
			t.Fatalf("%s with key %q and another body: %d %s", c.path, c.key, r.code, r.body)
		}
		ae := r.apiErr(t)
		if ae.Code != api.CodeIdempotencyKeyReused || ae.Field != c.field || ae.LastSeq != nil ||
			!strings.Contains(ae.Message, "already used for a different request") || !strings.Contains(ae.Message, c.key) {
			t.Errorf("%s with key %q and another body: %+v", c.path, c.key, ae)
		}
	}
	if after := e.dump(); after != before {
		t.Errorf("requests reusing keys changed the store:\n%s\n%s", before, after)
	}
	var again readSteps
	e.must(200, "GET", "/v1/sessions/s/steps", nil).json(t, &again)
	if len(again.Steps) != len(rs.Steps) || again.LastSeq != 6 {
		t.Errorf("GET /steps after the refused requests: %d steps, last %d", len(again.Steps), again.LastSeq)
	}
}

// TestAppendCompactionRetry: an envelope retried with the same key and
// the same compaction is a retry; with another compaction it is refused.
func TestAppendCompactionRetry(t *testing.T) {
	e := newEnv(t)
	e.create("s")
	e.appendSteps("s", "["+sysStep+","+taskStep+","+actionStep(1, "a")+","+actionStep(2, "b")+"]")
	summary := `{"type":"summary","summary":"Read two files.","covers":[{"from":3,"to":4}]}`
	body := `{"steps":[` + summary + `],"compaction":{"working":[1,2,-1],"removed":[3,4]}}`
	first := e.appendSteps("s", body, "Idempotency-Key", "sum")
	again := e.appendSteps("s", body, "Idempotency-Key", "sum")
	if fmt.Sprint(again) != fmt.Sprint(first) || first.CompactionSeq != 6 {
		t.Fatalf("retried envelope: %+v, first %+v", again, first)
	}
	before := e.dump()
	r := e.do("POST", "/v1/sessions/s/steps", `{"steps":[`+summary+`],"compaction":{"working":[1,2,-1,4],"removed":[3]}}`, "Idempotency-Key", "sum")
	if r.code != 409 || r.apiErr(t).Code != api.CodeIdempotencyKeyReused || !strings.Contains(r.apiErr(t).Message, `"sum" was already used for a different request`) {
		t.Errorf("envelope retried with another compaction: %d %s", r.code, r.body)
	}
	if after := e.dump(); after != before {
		t.Errorf("the refused envelope changed the store:\n%s\n%s", before, after)
	}
}

// TestAppendCompactionPinned: a compaction record that leaves the system
// prompt or the task out of its working set without removing them, or has
// no working set, is refused and changes nothing; one that keeps them, or
// removes them on purpose, is stored.
func TestAppendCompactionPinned(t *testing.T) {
	e := newEnv(t)
	e.create("s")
	e.appendSteps("s", "["+sysStep+","+taskStep+","+actionStep(1, "a")+"]")
	before := e.dump()
	for _, c := range []struct{ body, msg string }{
		{`{"compaction":{"working":[3]}}`, "step 1, a system prompt"},
		{`{"compaction":{"working":[1,3]}}`, "step 2, the first task"},
		{`{"compaction":{"removed":[1]}}`, "is required"},
		{`{"compaction":{"working":null,"removed":[1]}}`, "is required"},
		{`{"steps":[{"type":"system_prompt","content":"Be brief."}],"compaction":{"working":[1,2]}}`, "step 4, a system prompt"},
		{`{"compaction":{"working":[]}}`, "step 1, a system prompt"},
		{`{"compaction":{"working":[],"removed":[1,3]}}`, "step 2, the first task"},
		{`{"compaction":{"working":[1,2,9]}}`, "not the sequence number of a step"},
	} {
		r := e.do("POST", "/v1/sessions/s/steps", c.body)
		if r.code != 400 {
			t.Fatalf("%s: %d %s", c.body, r.code, r.body)
		}
		if ae := r.apiErr(t); ae.Code != api.CodeInvalid || !strings.HasPrefix(ae.Field, "compaction.working") || !strings.Contains(ae.Message, c.msg) {
			t.Errorf("%s: %+v", c.body, ae)
		}
	}
	if after := e.dump(); after != before {
		t.Errorf("refused compactions changed the store:\n%s\n%s", before, after)
	}
	var ctx api.ContextResponse
	e.must(201, "POST", "/v1/sessions/s/steps", `{"compaction":{"working":[1,2]}}`)
	e.must(200, "GET", "/v1/sessions/s/context", nil).json(t, &ctx)
	if fmt.Sprint(ctx.Steps) != "[1 2]" {
		t.Errorf("context after a compaction keeping the pinned steps: %v", ctx.Steps)
	}
	// Pinned steps named in the removed list leave on purpose: here the
	// session is cleared.
	e.must(201, "POST", "/v1/sessions/s/steps", `{"compaction":{"working":[],"removed":[1,2]}}`)
	e.must(200, "GET", "/v1/sessions/s/context", nil).json(t, &ctx)
	if len(ctx.Steps) != 0 {
		t.Errorf("context after a clear: %v", ctx.Steps)
	}
}
