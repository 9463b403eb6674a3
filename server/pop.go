package server

import (
	"errors"
	"net/http"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/store"
)

// pop serves POST /v1/sessions/{id}/pop (store.Pop): it removes the
// newest message from the session's working set and returns it. The body
// is empty or {}. With If-Match, only if the session's last sequence
// number is still the one given (409 otherwise, with the current one in
// the ETag); without, a pop that another writer got ahead of is tried
// again on the new working set.
func (s *Server) pop(w http.ResponseWriter, r *http.Request) {
	id, e := sessionID(r)
	if e != nil {
		writeError(w, e)
		return
	}
	var expected *int64
	ifMatch, present, e := singleHeader(r.Header, "If-Match")
	if e == nil {
		expected, e = parseIfMatch(ifMatch, present)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	body, e := readBody(w, r, s.cfg.MaxBodyBytes, true)
	if e != nil {
		writeError(w, e)
		return
	}
	if body != nil {
		var none struct{}
		if e := decodeStrict(body, &none); e != nil {
			writeError(w, e)
			return
		}
	}
	resp, err := store.Pop(r.Context(), s.store, store.PopRequest{Tenant: Tenant(r), SessionID: id, ExpectedLastSeq: expected})
	if err != nil {
		switch {
		case errors.Is(err, store.ErrNothingToPop):
			writeError(w, &Error{Status: http.StatusConflict, Code: api.CodeNothingToPop, cause: err,
				Message: "the session's working set is empty: there is no message to pop"})
		case errors.Is(err, agentmem.ErrConflict) && expected != nil:
			s.conflict(w, r, id, err)
		case errors.Is(err, agentmem.ErrConflict):
			writeError(w, &Error{Status: http.StatusConflict, Code: api.CodeConflict, cause: err,
				Message: "other writers kept changing the session while this request popped: nothing was popped; retry"})
		default:
			s.fail(w, r, "pop", sessionErr(id, err))
		}
		return
	}
	out := api.PopResponse{Seq: resp.Seq, IsError: resp.Message.Metadata[agentmem.MetaIsError] == "true", Removed: resp.Rest == nil,
		CompactionSeq: resp.CompactionSeq, LastSeq: resp.LastSeq}
	if wire := render.OpenAIRequest([]agentmem.Message{resp.Message}); len(wire) > 0 {
		out.Message = wire[0]
	}
	w.Header().Set("ETag", etag(resp.LastSeq))
	writeJSON(w, http.StatusOK, out)
}
