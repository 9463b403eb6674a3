package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/store"
)

func TestCompactStrategies(t *testing.T) {
	e := newEnv(t)
	e.session("s", 10) // steps 1 (system), 2 (task), 3..12 (actions)

	var res api.CompactResponse
	r := e.must(200, "POST", "/v1/sessions/s/compact", `{"strategy":"prune_old_observations","keep_last_n":2,"max_length":20}`)
	r.json(t, &res)
	if !res.Changed || len(res.Replaced) != 8 || len(res.Removed) != 0 || res.Before != 12 || res.After != 12 || res.LastSeq != 13 {
		t.Errorf("prune_old_observations: %+v", res)
	}
	if r.header.Get("ETag") != `"13"` {
		t.Errorf("ETag %q", r.header.Get("ETag"))
	}
	// Applying it again changes nothing and writes nothing.
	e.must(200, "POST", "/v1/sessions/s/compact", `{"strategy":"prune_old_observations","keep_last_n":2,"max_length":20}`).json(t, &res)
	if res.Changed || res.LastSeq != 13 {
		t.Errorf("again: %+v", res)
	}
	// The context shows the truncated copies; the log keeps the originals.
	var c api.ContextResponse
	e.must(200, "GET", "/v1/sessions/s/context", nil).json(t, &c)
	if !strings.Contains(fmt.Sprint(c.Messages), "[truncated") {
		t.Error("the context does not show truncated observations")
	}
	var rs readSteps
	e.must(200, "GET", "/v1/sessions/s/steps", nil).json(t, &rs)
	if len(rs.Steps) != 12 || len(rs.Compactions) != 1 || len(rs.Compactions[0].Replaced) != 8 || rs.Compactions[0].Seq != 13 {
		t.Errorf("log: %d steps, compactions %+v", len(rs.Steps), rs.Compactions)
	}
	if a := rs.Steps[2].(*agentmem.ActionStep); strings.Contains(a.Results[0].Content, "truncated") {
		t.Error("the log's original was changed")
	}

	e.must(200, "POST", "/v1/sessions/s/compact", `{"strategy":"keep_last_n","n":4}`).json(t, &res)
	if fmt.Sprint(res.Removed) != "[3 4 5 6 7 8]" || res.After != 6 {
		t.Errorf("keep_last_n: %+v", res)
	}
	e.must(200, "GET", "/v1/sessions/s/context", nil).json(t, &c)
	if fmt.Sprint(c.Steps) != "[1 2 9 10 11 12]" {
		t.Errorf("context after keep_last_n: %v", c.Steps)
	}

	e.must(200, "POST", "/v1/sessions/s/compact", `{"strategy":"summarize","keep_recent":1}`).json(t, &res)
	if fmt.Sprint(res.Removed) != "[9 10 11]" || len(res.Added) != 1 || res.Summary == "" {
		t.Errorf("summarize: %+v", res)
	}
	e.must(200, "GET", "/v1/sessions/s/context", nil).json(t, &c)
	if len(c.Summarized) == 0 || fmt.Sprint(c.Steps) != fmt.Sprintf("[1 2 %d 12]", res.Added[0]) {
		t.Errorf("context after summarize: steps %v, summarized %v", c.Steps, c.Summarized)
	}

	budget := c.Tokens - 1
	e.must(200, "POST", "/v1/sessions/s/compact", fmt.Sprintf(`{"strategy":"token_budget","budget":%d}`, budget)).json(t, &res)
	if len(res.Removed) == 0 {
		t.Errorf("token_budget %d: %+v", budget, res)
	}
	r = e.must(422, "POST", "/v1/sessions/s/compact", `{"strategy":"token_budget","budget":3}`)
	if err := r.apiErr(t); err.Code != api.CodeBudgetTooSmall || err.Required == 0 {
		t.Errorf("token_budget too small: %+v", err)
	}
	e.must(404, "POST", "/v1/sessions/nope/compact", `{"strategy":"keep_last_n","n":1}`)
}

func TestCompactBadInput(t *testing.T) {
	e := newEnv(t)
	e.session("s", 3)
	before := e.dump()
	for _, c := range []struct{ body, field string }{
		{`{}`, "strategy"},
		{`{"strategy":"magic"}`, "strategy"},
		{`{"strategy":"keep_last_n"}`, "n"},
		{`{"strategy":"keep_last_n","n":-1}`, "n"},
		{`{"strategy":"keep_last_n","n":"3"}`, "n"},
		{`{"strategy":"keep_last_n","n":3,"budget":5}`, "budget"},
		{`{"strategy":"token_budget"}`, "budget"},
		{`{"strategy":"token_budget","budget":0}`, "budget"},
		{`{"strategy":"prune_old_observations","n":2}`, "n"},
		{`{"strategy":"summarize","summarizer":"gpt"}`, "summarizer"},
		{`{"strategy":"summarize","summarizer":"llm"}`, "summarizer"},
		{`{"strategy":"summarize","keep_recent":1.5}`, "keep_recent"},
		{`{"strategy":"summarize","extra":1}`, "extra"},
		{`{"strategy":"keep_last_n","n":1} x`, ""},
		{`[]`, ""},
		{``, ""},
	} {
		r := e.do("POST", "/v1/sessions/s/compact", c.body)
		if r.code != 400 {
			t.Errorf("%s: %d %s", c.body, r.code, r.body)
			continue
		}
		if err := r.apiErr(t); err.Field != c.field {
			t.Errorf("%s: field %q, want %q (%s)", c.body, err.Field, c.field, err.Message)
		}
	}
	if r := e.do("POST", "/v1/sessions/s/compact", `{"strategy":"keep_last_n","n":1}`, "Content-Type", "text/plain"); r.code != 415 {
		t.Errorf("text/plain: %d", r.code)
	}
	if e.dump() != before {
		t.Error("a refused compaction changed the store")
	}
}

// fakeLLM is a Summarizer standing in for a model.
type fakeLLM struct {
	calls atomic.Int64
	fail  error
}

func (f *fakeLLM) Summarize(_ context.Context, req agentmem.SummaryRequest) (string, error) {
	f.calls.Add(1)
	if f.fail != nil {
		return "", f.fail
	}
	return fmt.Sprintf("The model summarized %d steps.", len(req.Steps)), nil
}

func TestCompactLLMSummarizer(t *testing.T) {
	llm := &fakeLLM{}
	e := newEnv(t, func(c *Config) { c.Summarizer = llm })
	e.session("s", 5)
	var res api.CompactResponse
	// The LLM is the default when configured.
	e.must(200, "POST", "/v1/sessions/s/compact", `{"strategy":"summarize","keep_recent":2}`).json(t, &res)
	if res.Summary != "The model summarized 3 steps." || llm.calls.Load() != 1 {
		t.Errorf("llm: %+v", res)
	}
	// The extractive one can still be asked for.
	e.appendSteps("s", "["+actionStep(20, "x")+","+actionStep(21, "y")+","+actionStep(22, "z")+"]")
	e.must(200, "POST", "/v1/sessions/s/compact", `{"strategy":"summarize","keep_recent":1,"summarizer":"extractive"}`).json(t, &res)
	if strings.Contains(res.Summary, "The model") && !strings.Contains(res.Summary, "#") || llm.calls.Load() != 1 {
		t.Errorf("extractive: %+v", res)
	}
	// A failing model is a 502, and nothing is written.
	e.appendSteps("s", "["+actionStep(30, "x")+","+actionStep(31, "y")+"]")
	before := e.dump()
	llm.fail = errors.New("model overloaded")
	r := e.must(502, "POST", "/v1/sessions/s/compact", `{"strategy":"summarize","keep_recent":1}`)
	if err := r.apiErr(t); err.Code != api.CodeSummarizerFailed || r.header.Get("Retry-After") == "" {
		t.Errorf("failing llm: %+v", err)
	}
	if e.dump() != before {
		t.Error("a failed summary changed the store")
	}
}

// racingStore appends a foreign step just before the first compaction
// append, so the compaction loses the race once.
type racingStore struct {
	*faultyStore
	raced atomic.Bool
}

func (r *racingStore) Append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	if req.Compaction != nil && r.raced.CompareAndSwap(false, true) {
		step := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "racer"}, Task: "appended during the compaction"}
		if _, err := r.faultyStore.Append(ctx, store.AppendRequest{SessionID: req.SessionID, Steps: []agentmem.Step{step}}); err != nil {
			return nil, err
		}
	}
	return r.faultyStore.Append(ctx, req)
}

func TestCompactRetriesAfterARace(t *testing.T) {
	var rs *racingStore
	e := newEnv(t, func(c *Config) {
		rs = &racingStore{faultyStore: faultyOf(c.Store)}
		c.Store = store.New(rs)
	})
	e.session("s", 5)
	var res api.CompactResponse
	e.must(200, "POST", "/v1/sessions/s/compact", `{"strategy":"keep_last_n","n":1}`).json(t, &res)
	if !rs.raced.Load() {
		t.Fatal("no race happened")
	}
	// The step appended during the race is kept: the compaction ran
	// again on the log that has it.
	var c api.ContextResponse
	e.must(200, "GET", "/v1/sessions/s/context", nil).json(t, &c)
	if fmt.Sprint(c.Steps) != "[1 2 8]" || !strings.Contains(fmt.Sprint(c.Messages), "appended during the compaction") {
		t.Errorf("after the race: %v %+v", c.Steps, res)
	}
}
