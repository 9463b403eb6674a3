package server

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/jsoncheck"
	"github.com/agentmem/agentmem/store"
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
// working set).
func checkAccepted(t *testing.T, req *stepsRequest) {
	t.Helper()
	steps := req.steps
	if (len(steps) == 0 && req.compaction == nil) || len(steps) > MaxStepsPerRequest {
		t.Fatalf("%d steps accepted", len(steps))
	}
	if req.compaction != nil && req.compaction.Working == nil {
		t.Fatalf("a compaction record without a working set accepted: %+v", req.compaction)
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

func FuzzDecodeMessages(f *testing.F) {
	f.Add([]byte(`{"role":"user","content":"hi"}`), "", false)
	f.Add([]byte(`[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]`), "k", false)
	f.Fuzz(func(t *testing.T, body []byte, key string, flush bool) {
		if checkIdempotencyKey(key, key != "") != nil {
			return
		}
		req, e := decodeMessages(body, key, flush, func() time.Time { return fixedNow })
		if !checkDecoded(t, body, e) {
			if e.Status != http.StatusBadRequest && e.Code != CodeToolResultsMissing {
				t.Fatalf("status %d for a message body", e.Status)
			}
			return
		}
		checkAccepted(t, req)
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
		switch p.strategy {
		case StrategyKeepLastN, StrategyPruneOldObservations:
		case StrategyTokenBudget:
			if p.budget < 1 {
				t.Fatalf("budget %d accepted", p.budget)
			}
		case StrategySummarize:
			if p.summarizer != SummarizerExtractive && !(p.summarizer == SummarizerLLM && haveLLM) {
				t.Fatalf("summarizer %q accepted (llm: %v)", p.summarizer, haveLLM)
			}
		default:
			t.Fatalf("strategy %q accepted", p.strategy)
		}
		if p.n < 0 || p.keepLastN < 0 || p.maxLength < 0 || p.keepRecent < 0 {
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
