package server

import (
	"errors"
	"net/http"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/internal/apiconv"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
)

// pop serves POST /v1/sessions/{id}/pop (sessions.Service.Pop): it
// removes the newest message from the session's working set and returns
// it. The body is empty or {}. With If-Match, it pops only if the
// session's last sequence number is still the one given; otherwise it
// answers 409, with the current one in the ETag. Without If-Match, a pop
// that another writer got ahead of is tried again on the new working set.
func (s *Server) pop(w http.ResponseWriter, r *http.Request) {
	id, expected, ok := s.popInput(w, r)
	if !ok {
		return
	}
	resp, err := s.svc.Pop(r.Context(), sessions.PopRequest{Tenant: Tenant(r), SessionID: id, ExpectedLastSeq: expected})
	if err != nil {
		s.rewriteFailed(w, r, id, expected, "pop", err)
		return
	}
	out := api.PopResponse{Seq: resp.Seq, IsError: resp.Message.Metadata[agentmem.MetaIsError] == "true", Metadata: resp.Message.Metadata,
		Removed: resp.Rest == nil, CompactionSeq: resp.CompactionSeq, LastSeq: resp.LastSeq}
	if wire := apiconv.OpenAIMessages([]agentmem.Message{resp.Message}); len(wire) > 0 {
		out.Message = wire[0]
	}
	w.Header().Set("ETag", etag(resp.LastSeq))
	writeJSON(w, http.StatusOK, out)
}

// popInput reads what a pop (or a clear) takes: the session ID, If-Match
// and a body that is empty or {}. It answers the request itself when
// something is wrong with it, and then returns false.
func (s *Server) popInput(w http.ResponseWriter, r *http.Request) (id string, expected *int64, ok bool) {
	id, e := sessionID(r)
	if e == nil {
		expected, e = ifMatchHeader(r)
	}
	var body []byte
	if e == nil {
		body, e = readBody(w, r, s.cfg.MaxBodyBytes, true)
	}
	if e == nil && body != nil {
		var none struct{}
		e = decodeStrict(body, &none)
	}
	if e != nil {
		writeError(w, e)
		return "", nil, false
	}
	return id, expected, true
}

// rewriteFailed answers the failure of a write that rewrites the working
// set (sessions.Service.Pop, sessions.Service.Clear) or completes its tool
// calls (POST /items). A pop of an empty working set is 409
// nothing_to_pop. A write whose If-Match did not hold is 409 with the
// current ETag. Anything else is answered as any store error: 503 when
// other writers kept getting ahead (store.ErrContended).
func (s *Server) rewriteFailed(w http.ResponseWriter, r *http.Request, id string, expected *int64, op string, err error) {
	switch {
	case errors.Is(err, store.ErrNothingToPop):
		writeError(w, &Error{Status: http.StatusConflict, Code: api.CodeNothingToPop, cause: err,
			Message: "the session's working set is empty: there is nothing to pop"})
	case errors.Is(err, agentmem.ErrConflict) && expected != nil:
		s.conflict(w, r, id, err)
	default:
		s.fail(w, r, op, sessionErr(id, err))
	}
}
