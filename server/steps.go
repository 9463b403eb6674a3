package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/internal/apiconv"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
)

// appendSteps serves POST /v1/sessions/{id}/steps.
func (s *Server) appendSteps(w http.ResponseWriter, r *http.Request) {
	s.appendBody(w, r, func(body []byte, key string) (*stepsRequest, *Error) {
		return decodeSteps(body, key, s.now(), agentmem.NewID)
	})
}

// appendMessages serves POST /v1/sessions/{id}/messages.
func (s *Server) appendMessages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	flush, e := boolParam(q, "flush_pending")
	if e != nil {
		writeError(w, e)
		return
	}
	s.appendBody(w, r, func(body []byte, _ string) (*stepsRequest, *Error) {
		return decodeMessages(body, flush)
	})
}

// appendBody reads, decodes and checks an append request completely, then
// appends its steps to the log in one atomic write. With If-Match, it
// appends only if the session's last sequence number is still the one
// given; otherwise it answers 409, with the current one in the ETag.
func (s *Server) appendBody(w http.ResponseWriter, r *http.Request, decode func(body []byte, key string) (*stepsRequest, *Error)) {
	id, key, expected, body, e := s.appendInput(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	req, e := decode(body, key)
	if e != nil {
		writeError(w, e)
		return
	}
	// The tenant is part of the session's key, in the append's own
	// transaction.
	tenant := Tenant(r)
	if req.messages != nil {
		s.appendMessagesTo(w, r, id, key, expected, tenant, req)
		return
	}
	// The store validates the request (store.ValidateAppend) before
	// anything else: a bad one is a 400 naming its field.
	ar := store.AppendRequest{SessionID: id, Steps: req.steps, Compaction: req.compaction, ExpectedLastSeq: expected, Tenant: tenant}
	if key != "" {
		// The fingerprint (store.StepsFingerprint) comes from the steps'
		// encodings, which the request then carries to the store.
		var err error
		if ar, err = store.WithStepsKey(ar, key); err != nil {
			writeError(w, inputError(err))
			return
		}
	}
	resp, err := s.svc.Append(r.Context(), ar)
	if err != nil {
		if errors.Is(err, store.ErrIDReused) {
			writeError(w, idempotencyError(err, key, req.single))
			return
		}
		if errors.Is(err, agentmem.ErrConflict) {
			s.conflict(w, r, id, err)
			return
		}
		s.fail(w, r, "append", sessionErr(id, err))
		return
	}
	w.Header().Set("ETag", etag(resp.LastSeq))
	if resp.Seqs == nil {
		resp.Seqs = []int64{}
	}
	writeJSON(w, http.StatusCreated, api.AppendResponse{Seqs: resp.Seqs, LastSeq: resp.LastSeq, CompactionSeq: resp.CompactionSeq})
}

// appendInput reads what every append route takes: the session ID, the
// Idempotency-Key and If-Match headers (the expected last sequence
// number) and the body, checked but not decoded.
func (s *Server) appendInput(w http.ResponseWriter, r *http.Request) (id, key string, expected *int64, body []byte, e *Error) {
	if id, e = sessionID(r); e != nil {
		return
	}
	key, present, e := singleHeader(r.Header, "Idempotency-Key")
	if e == nil {
		e = checkIdempotencyKey(key, present)
	}
	if e != nil {
		return
	}
	if expected, e = ifMatchHeader(r); e != nil {
		return
	}
	body, e = readBody(w, r, s.cfg.MaxBodyBytes, false)
	return
}

// ifMatchHeader parses the request's If-Match header, if any (see
// parseIfMatch).
func ifMatchHeader(r *http.Request) (*int64, *Error) {
	ifMatch, present, e := singleHeader(r.Header, "If-Match")
	if e != nil {
		return nil, e
	}
	return parseIfMatch(ifMatch, present)
}

// appendMessagesTo appends the messages of a POST /messages body
// (sessions.Service.AppendMessages): folded into steps against the session's pending
// tool calls, which tool messages complete.
func (s *Server) appendMessagesTo(w http.ResponseWriter, r *http.Request, id, key string, expected *int64, tenant string, req *stepsRequest) {
	resp, err := s.svc.AppendMessages(r.Context(), sessions.MessagesRequest{
		SessionID: id, Tenant: tenant, Messages: req.messages, Flush: req.flush, IdempotencyKey: key, Now: s.now, ExpectedLastSeq: expected,
	})
	if err != nil {
		switch e := messagesError(err, key, req.single); {
		case e != nil:
			writeError(w, e)
		case errors.Is(err, agentmem.ErrConflict) && expected != nil:
			s.conflict(w, r, id, err)
		default:
			s.fail(w, r, "append", sessionErr(id, err))
		}
		return
	}
	w.Header().Set("ETag", etag(resp.LastSeq))
	writeJSON(w, http.StatusCreated, api.AppendResponse{Seqs: resp.Seqs, LastSeq: resp.LastSeq, CompactionSeq: resp.CompactionSeq, Updated: resp.Updated})
}

// messagesError answers the refusals of sessions.Service.AppendMessages that the
// request itself causes (nil for the others): bad input (400, naming the
// message), a tool result that contradicts the recorded one (409
// tool_result_conflict) and a reused Idempotency-Key (409).
func messagesError(err error, key string, single bool) *Error {
	field := func(f string) string {
		if single {
			return strings.TrimPrefix(strings.TrimPrefix(f, "messages[0]"), ".")
		}
		return f
	}
	var ie *agentmem.InvalidError
	var ce *agentmem.ResultConflictError
	switch {
	case errors.As(err, &ie):
		return &Error{Status: http.StatusBadRequest, Code: api.CodeInvalid, Field: field(ie.Field), Message: ie.Reason, cause: err}
	case errors.As(err, &ce):
		return &Error{Status: http.StatusConflict, Code: api.CodeToolResultConflict, Field: field(prefixField(ce.Field, "content")), cause: err,
			Message: fmt.Sprintf("tool call %q already has a different result: a recorded result is not replaced (to replace the newest message, pop it first); the same result again is a retry and stores nothing", ce.CallID)}
	case errors.Is(err, store.ErrIDReused):
		return idempotencyError(err, key, single)
	}
	return nil
}

// idempotencyError answers an append that reuses the step IDs of an
// earlier one for a different request (store.ErrIDReused) with 409
// idempotency_key_reused. It names the Idempotency-Key when the request
// had one, since its step IDs come from it; else the step ID from the
// body.
func idempotencyError(err error, key string, single bool) *Error {
	e := &Error{Status: http.StatusConflict, Code: api.CodeIdempotencyKeyReused, Field: "steps", cause: err}
	detail := ""
	var re *store.IDReusedError
	if errors.As(err, &re) {
		detail = " (" + re.What() + ")"
		if re.Index >= 0 {
			e.Field = stepField(re.Index, single, "id")
		}
	}
	if key != "" {
		e.Field = "Idempotency-Key"
		e.Message = fmt.Sprintf("the Idempotency-Key %q was already used for a different request%s: nothing was stored; a retry must send the same body, a new request needs a new key", key, detail)
		return e
	}
	e.Message = fmt.Sprintf("the step IDs of this request were already used for a different request%s: nothing was stored; a retry must send the same steps, new steps need new IDs", detail)
	return e
}

// conflict answers a failed If-Match with 409 and the session's current
// last sequence number, so the client can re-read and retry.
func (s *Server) conflict(w http.ResponseWriter, r *http.Request, id string, cause error) {
	e := apiError(cause)
	e.Field = "If-Match"
	if sess, err := s.svc.Get(r.Context(), Tenant(r), id); err == nil {
		e.LastSeq = &sess.LastSeq
		e.Message = "the session's last sequence number is not the one in If-Match: read what was appended since, then retry with the new ETag"
	}
	writeError(w, e)
}

// readSteps serves GET /v1/sessions/{id}/steps?after=&limit=&last=.
func (s *Server) readSteps(w http.ResponseWriter, r *http.Request) {
	id, e := sessionID(r)
	if e != nil {
		writeError(w, e)
		return
	}
	q := r.URL.Query()
	after, e := int64Param(q, "after")
	if e != nil {
		writeError(w, e)
		return
	}
	limit, e := intParam(q, "limit", 0, 1, api.MaxReadLimit)
	if e != nil {
		writeError(w, e)
		return
	}
	last, e := intParam(q, "last", 0, 1, api.MaxReadLimit)
	if e != nil {
		writeError(w, e)
		return
	}
	if limit > 0 && last > 0 {
		writeError(w, errInvalid("last", "cannot be combined with limit"))
		return
	}
	if limit == 0 && last == 0 {
		limit = api.DefaultReadLimit
	}
	resp, err := s.svc.Read(r.Context(), store.ReadRequest{Tenant: Tenant(r), SessionID: id, After: after, Limit: limit, Last: last})
	if err != nil {
		s.fail(w, r, "read", sessionErr(id, err))
		return
	}
	out, err := apiconv.ReadSteps(resp.Entries, resp.Session.LastSeq)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	w.Header().Set("ETag", etag(resp.Session.LastSeq))
	writeJSON(w, http.StatusOK, out)
}

// int64Param parses a non-negative int64 query parameter; absent is 0.
func int64Param(q map[string][]string, name string) (int64, *Error) {
	n, e := intParam(q, name, 0, 0, int(^uint(0)>>1))
	return int64(n), e
}
