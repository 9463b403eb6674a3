package server

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/internal/apiconv"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/tokenizer"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// MaxBudget bounds Config.MaxContextTokens, and so the budget parameter of
// the context route.
const MaxBudget = 10_000_000

// pendingCalls converts a context's pending actions.
func pendingCalls(ps []agentmem.PendingAction) []api.PendingCalls {
	out := make([]api.PendingCalls, len(ps))
	for i, p := range ps {
		out[i] = api.PendingCalls{Seq: int64(p.Step), ToolCallIDs: p.ToolCallIDs}
	}
	return out
}

// getContext serves GET /v1/sessions/{id}/context.
func (s *Server) getContext(w http.ResponseWriter, r *http.Request) {
	id, e := sessionID(r)
	if e != nil {
		writeError(w, e)
		return
	}
	q := r.URL.Query()
	budget, e := intParam(q, "budget", 0, 0, MaxBudget)
	if e != nil {
		writeError(w, e)
		return
	}
	if budget > s.cfg.MaxContextTokens {
		writeError(w, errInvalid("budget", "is %d tokens, more than this server's maximum context of %d tokens", budget, s.cfg.MaxContextTokens))
		return
	}
	formatName := q.Get("format")
	if formatName == "" {
		formatName = render.NameOpenAI
	}
	if _, err := render.ByName(formatName); err != nil {
		writeError(w, apiError(err))
		return
	}
	var counter tokenizer.Counter
	if name := q.Get("tokenizer"); name != "" {
		var err error
		if counter, err = tokenizer.Get(name); err != nil {
			writeError(w, errInvalid("tokenizer", "unknown tokenizer %q (known: %s)", name, strings.Join(tokenizer.Names(), ", ")))
			return
		}
	}
	truncate, e := boolParam(q, "truncate")
	if e != nil {
		writeError(w, e)
		return
	}
	fo, e := s.factsOptions(q)
	if e != nil {
		writeError(w, e)
		return
	}
	ro, e := s.recallOptions(q)
	if e != nil {
		writeError(w, e)
		return
	}
	reuse := contexts.Get().(*agentmem.Context)
	c, err := s.svc.Context(r.Context(), sessions.ContextRequest{Tenant: Tenant(r), SessionID: id, Budget: budget,
		Format: formatName, Counter: counter, TruncateToFill: truncate, Facts: fo, Recall: ro, Reuse: reuse})
	if err != nil {
		contexts.Put(reuse)
		var be *agentmem.BudgetError
		switch {
		case errors.Is(err, agentmem.ErrNotFound):
			s.fail(w, r, "read", sessionErr(id, err))
		case errors.As(err, &be) || errors.Is(err, context.Canceled):
			writeError(w, apiError(err))
		default:
			s.fail(w, r, "read", err)
		}
		return
	}
	seq := c.LastSeq
	msgs, tokens := c.Messages, c.Tokens
	var shown []api.FactView
	if c.Facts != nil {
		shown = make([]api.FactView, len(c.Facts))
		for i, h := range c.Facts {
			rel, score := h.Relevance, h.Score
			shown[i] = api.FactView{Fact: apiconv.Fact(h.Fact), EffectiveConfidence: h.Confidence, Relevance: &rel, Score: &score}
		}
	}
	out := api.ContextResponse{
		Format: c.Format, Tokenizer: c.Counter, Budget: budget, MaxContextTokens: s.cfg.MaxContextTokens, Tokens: tokens, Facts: shown,
		Steps: nonNil(c.Steps), Dropped: nonNil(apiconv.DroppedRuns(c.Dropped)), DroppedSteps: c.DroppedSteps,
		Truncated: nonNil(c.Truncated), NewestTruncated: c.NewestTruncated, Summarized: nonNil(apiconv.Ranges(c.Summarized)), Pending: pendingCalls(c.Pending), LastSeq: seq, Recalled: c.Recalled,
		Blocks: apiconv.ContextBlocks(c.Blocks),
	}
	w.Header().Set("ETag", etag(seq))
	writeEncoded(w, http.StatusOK, func(buf *bytes.Buffer) error { return encodeContext(buf, out, formatName, msgs) })
	if len(c.Context.Messages) <= maxPooledMessages {
		contexts.Put(c.Context)
	}
}

// contexts recycles the storage of the contexts fitted for answers
// (agentmem.ContextOptions.Reuse): the messages, parts and tool calls a
// context copies out of the working set are most of what a context
// request allocates. A context is put back once its answer is written,
// which is the last use of it and of everything taken from it.
var contexts = sync.Pool{New: func() any { return new(agentmem.Context) }}

// maxPooledMessages keeps a rare huge context's storage out of the pool.
const maxPooledMessages = 1024

// encodeContext writes out to buf as encodeResponse writes it with
// Messages set to render.Encode(format, msgs), byte for byte
// (TestEncodeContext), several times cheaper. The encoder writes out with
// a null for the messages, whose place it records, and render.AppendJSON
// writes the messages there, without Encode's wire structs and without
// reflection: they are most of a context's bytes.
func encodeContext(buf *bytes.Buffer, out api.ContextResponse, format string, msgs []agentmem.Message) error {
	start := buf.Len()
	var mark messagesMark
	out.Messages = &mark
	if err := jsonv2.MarshalWrite(buf, out, responseEncoding); err != nil {
		return err
	}
	at := start + int(mark.end) - len("null")
	if mark.end == 0 || at+len("null") > buf.Len() || string(buf.Bytes()[at:at+len("null")]) != "null" {
		return errors.New("server: the context's messages were not where the encoder recorded them")
	}
	// The fields after the messages: a few hundred bytes, on the stack.
	var small [1024]byte
	tail := append(small[:0], buf.Bytes()[at+len("null"):]...)
	buf.Truncate(at)
	b, err := render.AppendJSON(buf.AvailableBuffer(), format, msgs)
	if err != nil {
		return err
	}
	buf.Write(b)
	buf.Write(tail)
	buf.WriteByte('\n')
	if encodeCheck != nil {
		if out.Messages, err = render.Encode(format, msgs); err != nil {
			return err
		}
		encodeCheck(out, buf.Bytes()[start:])
	}
	return nil
}

// messagesMark stands for a context's messages while encodeContext encodes
// the rest of the response: it writes null and records the output offset
// after it.
type messagesMark struct{ end int64 }

// MarshalJSONTo implements json.MarshalerTo of JSON v2.
func (m *messagesMark) MarshalJSONTo(enc *jsontext.Encoder) error {
	if err := enc.WriteToken(jsontext.Null); err != nil {
		return err
	}
	m.end = enc.OutputOffset()
	return nil
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
