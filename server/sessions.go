package server

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/internal/apiconv"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
)

// createSession serves POST /v1/sessions.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	body, e := readBody(w, r, s.cfg.MaxBodyBytes, true)
	if e != nil {
		writeError(w, e)
		return
	}
	req, e := decodeCreate(body)
	if e != nil {
		writeError(w, e)
		return
	}
	// The session belongs to the request's tenant, in its own ID space:
	// an ID another tenant uses is free here; only one of the tenant's
	// own is 409.
	req.Tenant = Tenant(r)
	sess, err := s.svc.Create(r.Context(), req)
	if err != nil {
		s.fail(w, r, "create", err)
		return
	}
	w.Header().Set("Location", "/v1/sessions/"+url.PathEscape(sess.ID))
	w.Header().Set("ETag", etag(sess.LastSeq))
	writeJSON(w, http.StatusCreated, apiconv.Session(sess))
}

// listSessions serves GET /v1/sessions.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size, e := intParam(q, "page_size", 0, 0, store.MaxPageSize)
	if e != nil {
		writeError(w, e)
		return
	}
	req := store.ListRequest{Tenant: Tenant(r), UserID: q.Get("user_id"), Agent: q.Get("agent"), ParentID: q.Get("parent_id"), PageSize: size, PageToken: q.Get("page_token")}
	if _, _, err := store.ValidateList(req); err != nil {
		writeError(w, inputError(err))
		return
	}
	resp, err := s.svc.List(r.Context(), req)
	if err != nil {
		s.fail(w, r, "list", err)
		return
	}
	out := api.ListSessionsResponse{Sessions: apiconv.Sessions(resp.Sessions), Damaged: apiconv.Damaged(resp.Damaged), NextPageToken: resp.NextPageToken}
	writeJSON(w, http.StatusOK, out)
}

// getSession serves GET /v1/sessions/{id}.
func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	id, e := sessionID(r)
	if e != nil {
		writeError(w, e)
		return
	}
	sess, err := s.svc.Get(r.Context(), Tenant(r), id)
	if err != nil {
		s.fail(w, r, "get", sessionErr(id, err))
		return
	}
	w.Header().Set("ETag", etag(sess.LastSeq))
	writeJSON(w, http.StatusOK, apiconv.Session(sess))
}

// deleteSession serves DELETE /v1/sessions/{id}.
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	id, e := sessionID(r)
	if e != nil {
		writeError(w, e)
		return
	}
	tenant := Tenant(r)
	if err := s.svc.Delete(r.Context(), tenant, id); err != nil {
		s.fail(w, r, "delete", sessionErr(id, err))
		return
	}
	s.awaitIndex(r.Context(), "delete")
	w.WriteHeader(http.StatusNoContent)
}

// forkSession serves POST /v1/sessions/{id}/fork: a branch that sees the
// session's log up to at_seq, with the same tenant, user and agent.
func (s *Server) forkSession(w http.ResponseWriter, r *http.Request) {
	id, e := sessionID(r)
	if e != nil {
		writeError(w, e)
		return
	}
	body, e := readBody(w, r, s.cfg.MaxBodyBytes, true)
	if e != nil {
		writeError(w, e)
		return
	}
	req, ttl, e := decodeFork(body)
	if e != nil {
		writeError(w, e)
		return
	}
	branch, err := s.svc.Fork(r.Context(), sessions.ForkRequest{Tenant: Tenant(r), SessionID: id,
		AtSeq: req.AtSeq, ID: req.ID, Metadata: req.Metadata, Retention: store.Retention(req.Retention), TTL: ttl,
		Pinning: apiconv.PinningFromAPI(req.Pinning), AutoCompact: apiconv.AutoCompactFromAPI(req.AutoCompact), ExtractFacts: apiconv.Bool(req.ExtractFacts)})
	if err != nil {
		if errors.Is(err, agentmem.ErrNotFound) { // no parent (or it went away meanwhile)
			err = errNoSession(id)
		}
		s.fail(w, r, "create", err)
		return
	}
	w.Header().Set("Location", "/v1/sessions/"+url.PathEscape(branch.ID))
	w.Header().Set("ETag", etag(branch.LastSeq))
	writeJSON(w, http.StatusCreated, apiconv.Session(branch))
}

// onlyParams refuses query parameters outside allowed (a misspelt
// parameter would otherwise be ignored silently), repeated ones (but those
// allowed as "name...", which may repeat) and names or values that are not
// valid UTF-8.
func onlyParams(q map[string][]string, allowed ...string) *Error {
	for k, v := range q {
		if !utf8.ValidString(k) {
			return errInvalid("", "a query parameter's name is not valid UTF-8")
		}
		for _, x := range v {
			if !utf8.ValidString(x) {
				return errInvalid(k, "is not valid UTF-8")
			}
		}
		ok, repeats := false, false
		for _, a := range allowed {
			ok = ok || k == a
			repeats = repeats || a == k+"..."
		}
		if !ok && !repeats {
			return errInvalid(k, "is an unknown query parameter")
		}
		if len(v) > 1 && !repeats {
			return errInvalid(k, "is given more than once")
		}
	}
	return nil
}

// intParam parses an integer query parameter within [lo, hi]; absent
// means def.
func intParam(q map[string][]string, name string, def, lo, hi int) (int, *Error) {
	v := ""
	if vs := q[name]; len(vs) > 0 {
		v = vs[0]
	}
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, errInvalid(name, "must be an integer from %d to %d, not %q", lo, hi, v)
	}
	return n, nil
}

// boolParam parses a boolean query parameter; absent means false.
func boolParam(q map[string][]string, name string) (bool, *Error) {
	v := ""
	if vs := q[name]; len(vs) > 0 {
		v = vs[0]
	}
	switch v {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	}
	return false, errInvalid(name, "must be true or false, not %q", v)
}

// awaitIndex waits, at most Config.IndexWait, for the recall index to
// follow the log up to the write just made, so that what a delete
// removed is not found by the searches that come after it. The write is
// stored either way: an index further behind is logged and catches up
// by itself.
func (s *Server) awaitIndex(ctx context.Context, op string) {
	if s.index == nil {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.IndexWait)
	defer cancel()
	if err := s.index.Sync(wctx); err != nil && ctx.Err() == nil {
		s.log.WarnContext(ctx, "the recall index is behind the log; it catches up by itself", "op", op, "err", err)
	}
}
