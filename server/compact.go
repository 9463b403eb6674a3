package server

import (
	"errors"
	"net/http"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/sessions"
)

// compact serves POST /v1/sessions/{id}/compact (sessions.Service.Compact:
// atomically, and only if no other writer appended in between, else
// planned and tried again within the service's retry policy, then 503:
// see Busy sessions in the package documentation).
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
	plan, e := decodeCompact(body, s.svc.Features().LLMSummarizer)
	if e != nil {
		writeError(w, e)
		return
	}
	res, err := s.svc.Compact(r.Context(), sessions.CompactRequest{Tenant: Tenant(r), SessionID: id, Plan: plan})
	if err != nil {
		var se *sessions.SummarizerError
		if errors.As(err, &se) {
			s.log.Warn("compact: the summarizer failed", "session", id, "summarizer", se.Summarizer, "err", err)
			writeError(w, &Error{Status: http.StatusBadGateway, Code: api.CodeSummarizerFailed, Field: "summarizer",
				Message: "the summarizer failed: " + se.Err.Error(), RetryAfter: 1, cause: err})
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
	out := api.CompactResponse{Changed: res.Changed(), Before: res.Before, After: res.After, LastSeq: res.LastSeq,
		Removed: numbers(res.Removed), Replaced: numbers(res.Replaced), Added: numbers(res.Added)}
	for _, st := range res.Added {
		if sum, ok := st.(*agentmem.SummaryStep); ok {
			out.Summary = sum.Summary
		}
	}
	w.Header().Set("ETag", etag(out.LastSeq))
	writeJSON(w, http.StatusOK, out)
}

// numbers lists the numbers of steps.
func numbers(steps []agentmem.Step) []int {
	out := make([]int, len(steps))
	for i, st := range steps {
		out[i] = st.Info().Number
	}
	return out
}
