package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/summarize"
)

// compactAttempts bounds the retries of a compaction that lost a race
// with another writer of the session.
const compactAttempts = 3

// compact serves POST /v1/sessions/{id}/compact. The compaction runs on a
// memory bound to the session (store.OpenMemory), so it is recorded in
// the log through the bound memory's journal, atomically and only if no
// other writer appended in between; if one did, the memory is reloaded
// and the compaction tried again, up to three times (then 409).
func (s *Server) compact(w http.ResponseWriter, r *http.Request) {
	id, e := sessionID(r)
	if e != nil {
		writeError(w, e)
		return
	}
	body, e := readBody(w, r, s.cfg.MaxBodyBytes, false)
	if e != nil {
		writeError(w, e)
		return
	}
	plan, e := decodeCompact(body, s.cfg.Summarizer != nil)
	if e != nil {
		writeError(w, e)
		return
	}
	ctx := r.Context()
	tenant := Tenant(r)
	b, err := store.OpenTenantMemory(ctx, s.store, tenant, id, agentmem.Options{Counter: s.counter, Clock: s.now})
	if err != nil {
		s.fail(w, r, "read", sessionErr(id, err))
		return
	}
	// b is not closed: Close would delete a single-run session, and a
	// bound memory holds nothing but memory.
	var comp *agentmem.Compaction
	for attempt := 1; ; attempt++ {
		comp, err = s.runCompaction(ctx, b, plan)
		if err == nil || !errors.Is(err, agentmem.ErrConflict) || attempt == compactAttempts {
			break
		}
		if err = b.Reload(ctx); err != nil {
			break
		}
	}
	if err != nil {
		var se *summarizerError
		if errors.As(err, &se) {
			s.log.Warn("compact: the summarizer failed", "session", id, "summarizer", plan.summarizer, "err", err)
			writeError(w, &Error{Status: http.StatusBadGateway, Code: api.CodeSummarizerFailed, Field: "summarizer",
				Message: "the summarizer failed: " + se.err.Error(), RetryAfter: 1, cause: err})
			return
		}
		var be *agentmem.BudgetError
		if errors.As(err, &be) || errors.Is(err, agentmem.ErrInvalid) || errors.Is(err, agentmem.ErrConflict) || errors.Is(err, agentmem.ErrNotFound) {
			writeError(w, apiError(sessionErr(id, err)))
			return
		}
		s.fail(w, r, "compact", err)
		return
	}
	out := api.CompactResponse{Changed: comp.Changed(), Before: comp.Before, After: comp.After, LastSeq: b.Session().LastSeq,
		Removed: numbers(comp.Removed), Replaced: numbers(comp.Replaced), Added: numbers(comp.Added)}
	for _, st := range comp.Added {
		if sum, ok := st.(*agentmem.SummaryStep); ok {
			out.Summary = sum.Summary
		}
	}
	w.Header().Set("ETag", etag(out.LastSeq))
	writeJSON(w, http.StatusOK, out)
}

// runCompaction applies a compact plan to a bound memory.
func (s *Server) runCompaction(ctx context.Context, b *store.Bound, p *compactPlan) (*agentmem.Compaction, error) {
	switch p.strategy {
	case api.StrategyKeepLastN:
		return b.Prune(ctx, agentmem.KeepLastN(p.n))
	case api.StrategyTokenBudget:
		return b.Prune(ctx, agentmem.TokenBudget(p.budget))
	case api.StrategyPruneOldObservations:
		return b.Prune(ctx, agentmem.PruneOldObservations(p.keepLastN, p.maxLength))
	case api.StrategySummarize:
		var sum agentmem.Summarizer = summarize.Extractive{Counter: s.counter}
		if p.summarizer == api.SummarizerLLM {
			sum = s.cfg.Summarizer
		}
		return b.Summarize(ctx, tagSummarizer{sum}, p.keepRecent)
	}
	return nil, errInvalid("strategy", "unknown strategy %q", p.strategy)
}

// numbers lists the numbers of steps.
func numbers(steps []agentmem.Step) []int {
	out := make([]int, len(steps))
	for i, st := range steps {
		out[i] = st.Info().Number
	}
	return out
}

// tagSummarizer marks the errors of a summarizer, to tell them from the
// store's.
type tagSummarizer struct{ s agentmem.Summarizer }

func (t tagSummarizer) Summarize(ctx context.Context, req agentmem.SummaryRequest) (string, error) {
	text, err := t.s.Summarize(ctx, req)
	if err != nil && ctx.Err() == nil {
		return "", &summarizerError{err}
	}
	return text, err
}

// summarizerError is an error of the summarizer of a compaction.
type summarizerError struct{ err error }

func (e *summarizerError) Error() string { return "summarizer: " + e.err.Error() }
func (e *summarizerError) Unwrap() error { return e.err }
