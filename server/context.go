package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/tokenizer"
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
	format, err := render.ByName(formatName)
	if err != nil {
		writeError(w, apiError(err))
		return
	}
	counter := s.counter
	if name := q.Get("tokenizer"); name != "" {
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
	fo, e := s.factsOptions(q, budget)
	if e != nil {
		writeError(w, e)
		return
	}
	st, err := s.cache.get(r.Context(), Tenant(r), id, form{formatName, counter.Name()})
	if err != nil {
		s.fail(w, r, "read", err)
		return
	}
	seq := st.seq
	// Without a budget the context is fitted to the server's maximum, so
	// that a long session's request renders only the steps that fit,
	// never the whole log.
	fit := budget - fo.reserve
	if budget == 0 {
		fit = s.cfg.MaxContextTokens
	}
	c, err := st.mem.Context(r.Context(), agentmem.ContextOptions{Budget: fit, Format: format, Counter: counter, TruncateToFill: truncate})
	if err != nil {
		var be *agentmem.BudgetError
		if errors.As(err, &be) || errors.Is(err, context.Canceled) {
			writeError(w, apiError(err))
			return
		}
		s.internal(w, r, err)
		return
	}
	msgs, tokens := c.Messages, c.Tokens
	var shown []api.FactView
	if fo.k > 0 {
		if msgs, shown, tokens, err = s.injectFacts(r.Context(), Tenant(r), st.user, fo, msgs, tokens, counter); err != nil {
			s.fail(w, r, "facts_inject", err)
			return
		}
	}
	wire, err := render.Encode(formatName, msgs)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	out := api.ContextResponse{
		Format: c.Format, Tokenizer: c.Counter, Budget: budget, MaxContextTokens: s.cfg.MaxContextTokens, Tokens: tokens, Messages: wire, Facts: shown,
		Steps: nonNil(c.Steps), Dropped: nonNil(c.Dropped), DroppedSteps: c.DroppedSteps,
		Truncated: nonNil(c.Truncated), NewestTruncated: c.NewestTruncated, Summarized: nonNil(c.Summarized), Pending: pendingCalls(c.Pending), LastSeq: seq,
	}
	w.Header().Set("ETag", etag(seq))
	writeJSON(w, http.StatusOK, out)
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
