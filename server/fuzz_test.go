package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/internal/jsoncheck"
	"github.com/agentmem/agentmem/responses"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

// The fuzz targets drive the request decoders with arbitrary bodies, as
// the handlers do after readBody's checks: a decoder never panics,
// refuses with a 4xx *Error, refuses every body jsoncheck refuses (invalid
// UTF-8, lone surrogate escapes, repeated keys: see checkDecoded), and
// what it accepts is valid input for the store (so nothing half-valid
// reaches a write). Seeds are in testdata/fuzz/<Name>/.

// checkRefusal fails unless e is a 4xx error with a code and a message.
func checkRefusal(t *testing.T, e *Error) {
	t.Helper()
	if e.Status < 400 || e.Status > 499 || e.Code == "" || e.Message == "" {
		t.Fatalf("refusal %+v", e)
	}
	if !utf8.ValidString(e.Message) || !utf8.ValidString(e.Field) {
		t.Fatalf("refusal text is not UTF-8: %+v", e)
	}
}

// checkDecoded fails unless a decoder's answer e to body refuses what
// jsoncheck.Check refuses, with a 4xx. It reports whether the decoder
// accepted the body.
func checkDecoded(t *testing.T, body []byte, e *Error) bool {
	t.Helper()
	if e != nil {
		checkRefusal(t, e)
		return false
	}
	// An empty body is no body (the optional body of a create or a fork).
	if err := jsoncheck.Check(body); err != nil && len(body) > 0 {
		t.Fatalf("accepted a body jsoncheck refuses (%v): %q", err, body)
	}
	return true
}

// checkAccepted fails unless a decoded request makes a valid append: at
// least one step (none only with a compaction record, which names its
// working set, or is an amendment with at least one copy).
func checkAccepted(t *testing.T, req *stepsRequest) {
	t.Helper()
	steps := req.steps
	if (len(steps) == 0 && req.compaction == nil) || len(steps) > api.MaxStepsPerRequest {
		t.Fatalf("%d steps accepted", len(steps))
	}
	if c := req.compaction; c != nil && !c.Amend && c.Working == nil {
		t.Fatalf("a compaction record without a working set accepted: %+v", c)
	}
	if c := req.compaction; c != nil && c.Amend && (len(c.Working) > 0 || len(c.Removed) > 0 || len(c.Replaced) == 0) {
		t.Fatalf("an amendment with a working or removed list, or without copies, accepted: %+v", c)
	}
	for i, s := range steps {
		if err := s.Validate(); err != nil {
			t.Fatalf("step %d accepted but invalid: %v", i, err)
		}
		if s.Info().ID == "" || s.Info().Number != 0 || s.Info().Time.IsZero() {
			t.Fatalf("step %d header %+v", i, s.Info())
		}
		if _, err := agentmem.MarshalStep(s); err != nil {
			t.Fatalf("step %d does not marshal: %v", i, err)
		}
	}
	err := store.ValidateAppend(store.AppendRequest{SessionID: "s", Steps: steps, Compaction: req.compaction})
	if err != nil && !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("ValidateAppend: %v", err)
	}
}

func FuzzDecodeSteps(f *testing.F) {
	f.Add([]byte(sysStep), "")
	f.Add([]byte("["+taskStep+","+actionStep(1, "x")+"]"), "key")
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		if checkIdempotencyKey(key, key != "") != nil {
			return // the handler refuses these first
		}
		n := 0
		newID := func() string { n++; return "id-" + strconv.Itoa(n) }
		req, e := decodeSteps(body, key, fixedNow, newID)
		if checkDecoded(t, body, e) {
			checkAccepted(t, req)
		}
	})
}

// FuzzDecodeMessages decodes a messages body and appends it, as the
// handler does (sessions.Service.AppendMessages), to a session whose working set
// holds a pending action with calls "p1" (answered "r1") and "p2": a
// refusal is a 4xx that stores nothing; what is accepted stores valid
// steps, and the working set's pending actions are exactly those whose
// calls await results.
func FuzzDecodeMessages(f *testing.F) {
	f.Add([]byte(`{"role":"user","content":"hi"}`), "", false)
	f.Add([]byte(`[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]`), "k", false)
	f.Add([]byte(`{"role":"tool","tool_call_id":"p2","content":"r2"}`), "k", false)
	f.Fuzz(func(t *testing.T, body []byte, key string, flush bool) {
		if checkIdempotencyKey(key, key != "") != nil {
			return
		}
		req, e := decodeMessages(body, flush)
		if !checkDecoded(t, body, e) {
			if e.Status != http.StatusBadRequest {
				t.Fatalf("status %d for a message body", e.Status)
			}
			return
		}
		if len(req.messages) == 0 || len(req.messages) > api.MaxStepsPerRequest || req.flush != flush {
			t.Fatalf("decoded %d messages, flush %v", len(req.messages), req.flush)
		}
		ctx := context.Background()
		st := memstore.New(memstore.Options{})
		defer st.Close()
		if _, err := st.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
			t.Fatal(err)
		}
		pending := &agentmem.ActionStep{StepInfo: agentmem.StepInfo{ID: "p"},
			ToolCalls: []agentmem.ToolCall{{ID: "p1", Name: "f"}, {ID: "p2", Name: "g"}}, Results: []agentmem.ToolResult{{CallID: "p1", Content: "r1"}}}
		if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{pending}}); err != nil {
			t.Fatal(err)
		}
		resp, err := newStoreService(t, st).AppendMessages(ctx, sessions.MessagesRequest{SessionID: "s", Messages: req.messages, Flush: flush,
			IdempotencyKey: key, Now: func() time.Time { return fixedNow }})
		after, rerr := st.Read(ctx, store.ReadRequest{SessionID: "s", WorkingSet: true})
		if rerr != nil {
			t.Fatal(rerr)
		}
		if err != nil {
			e := messagesError(err, key, req.single)
			if e == nil {
				t.Fatalf("AppendMessages: %v", err)
			}
			checkRefusal(t, e)
			if after.Session.LastSeq != 1 {
				t.Fatalf("a refused append stored something: last seq %d", after.Session.LastSeq)
			}
			return
		}
		if resp.LastSeq != after.Session.LastSeq {
			t.Fatalf("response %+v, session %+v", resp, after.Session)
		}
		for _, s := range after.Steps {
			if err := s.Validate(); err != nil {
				t.Fatalf("stored step %d is invalid: %v", s.Info().Number, err)
			}
			if a, ok := s.(*agentmem.ActionStep); ok && flush && a.Pending() {
				t.Fatalf("step %d pending after a flush", a.Number)
			}
		}
	})
}

func FuzzDecodeCompact(f *testing.F) {
	f.Add([]byte(`{"strategy":"keep_last_n","n":20}`), false)
	f.Add([]byte(`{"strategy":"summarize","summarizer":"llm"}`), true)
	f.Fuzz(func(t *testing.T, body []byte, haveLLM bool) {
		p, e := decodeCompact(body, haveLLM)
		if !checkDecoded(t, body, e) {
			return
		}
		switch p.Strategy {
		case api.StrategyKeepLastN, api.StrategyPruneOldObservations:
		case api.StrategyTokenBudget:
			if p.Budget < 1 {
				t.Fatalf("budget %d accepted", p.Budget)
			}
		case api.StrategySummarize:
			if p.Summarizer != api.SummarizerExtractive && !(p.Summarizer == api.SummarizerLLM && haveLLM) {
				t.Fatalf("summarizer %q accepted (llm: %v)", p.Summarizer, haveLLM)
			}
		default:
			t.Fatalf("strategy %q accepted", p.Strategy)
		}
		if p.N < 0 || p.KeepLastN < 0 || p.MaxLength < 0 || p.KeepRecent < 0 {
			t.Fatalf("negative parameter accepted: %+v", p)
		}
	})
}

func FuzzDecodeCreate(f *testing.F) {
	f.Add([]byte(`{"id":"s1","user_id":"u","agent":"a","metadata":{"k":"v"},"retention":"session","ttl_seconds":60}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, e := decodeCreate(body)
		if !checkDecoded(t, body, e) {
			return
		}
		if err := store.ValidateCreate(req); err != nil {
			t.Fatalf("accepted an invalid create: %v", err)
		}
	})
}

// FuzzDecodeItems drives the decoder of POST /items: it refuses with a
// 400 what jsoncheck refuses, and what it accepts converts to messages
// that are valid, each carrying its item's JSON exactly.
func FuzzDecodeItems(f *testing.F) {
	f.Add([]byte(`{"items":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}`))
	f.Add([]byte(`{"items":[{"type":"reasoning","summary":[]},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"r"}]}]}`))
	f.Add([]byte(`{"items":[{"role":"robot","content":"x"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		items, e := decodeItems(body)
		if !checkDecoded(t, body, e) {
			if e.Status != http.StatusBadRequest {
				t.Fatalf("status %d for an items body", e.Status)
			}
			return
		}
		if len(items) == 0 || len(items) > api.MaxStepsPerRequest {
			t.Fatalf("decoded %d items", len(items))
		}
		msgs, err := responses.ToMessages(items, responses.Options{NewID: agentmem.NewID, Newest: "n", LastSeq: 1})
		if err != nil {
			t.Fatalf("accepted items do not convert: %v", err)
		}
		for i, m := range msgs {
			if err := m.Validate(); err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
			var b bytes.Buffer
			if err := json.Compact(&b, items[i]); err != nil || m.Metadata[responses.MetaItem] != b.String() {
				t.Fatalf("message %d keeps %q for %s", i, m.Metadata[responses.MetaItem], items[i])
			}
		}
	})
}

// newStoreService returns a sessions service over st, without a cache.
func newStoreService(t testing.TB, st *store.Store) *sessions.Service {
	t.Helper()
	svc, err := sessions.New(sessions.Config{Store: st, CacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}
