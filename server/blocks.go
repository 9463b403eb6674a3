package server

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/internal/apiconv"
)

// blocksBy is who a change of the API is recorded as when its body names
// nobody.
const blocksBy = "api"

// blockOwner returns the memory blocks and the owner of the request's
// path: /v1/users/{user}/... or /v1/sessions/{id}/..., a session that
// must exist in the request's tenant (another tenant's is not found, as
// a missing one). Else it answers and returns false.
func (s *Server) blockOwner(w http.ResponseWriter, r *http.Request) (*blocks.Memory, blocks.Owner, bool) {
	if s.cfg.Blocks == nil {
		writeError(w, errNotConfigured("memory blocks"))
		return nil, blocks.Owner{}, false
	}
	if strings.Contains(r.Pattern, "{user}") {
		owner := blocks.User(r.PathValue("user"))
		if err := blocks.ValidateOwner(Tenant(r), owner); err != nil {
			e := inputError(err)
			e.Field = "user"
			writeError(w, e)
			return nil, owner, false
		}
		return s.cfg.Blocks, owner, true
	}
	id, e := sessionID(r)
	if e != nil {
		writeError(w, e)
		return nil, blocks.Owner{}, false
	}
	if _, err := s.svc.Get(r.Context(), Tenant(r), id); err != nil {
		s.fail(w, r, "blocks", sessionErr(id, err))
		return nil, blocks.Owner{}, false
	}
	return s.cfg.Blocks, blocks.Session(id), true
}

// blockKey returns the memory blocks and the key of the request's path
// (blockOwner, and {label}), or answers and returns false.
func (s *Server) blockKey(w http.ResponseWriter, r *http.Request) (*blocks.Memory, blocks.Key, bool) {
	label := r.PathValue("label")
	if err := blocks.ValidateLabel(label); err != nil {
		writeError(w, inputError(err))
		return nil, blocks.Key{}, false
	}
	m, owner, ok := s.blockOwner(w, r)
	return m, blocks.Key{Tenant: Tenant(r), Owner: owner, Label: label}, ok
}

// blockIfMatch parses the If-Match header of a block's write: the
// version the client read, bare or as an entity tag ("3", W/"3"); 0 when
// there is none.
func blockIfMatch(r *http.Request) (int64, *Error) {
	h, present, e := singleHeader(r.Header, "If-Match")
	if e != nil || !present {
		return 0, e
	}
	v := strings.TrimPrefix(strings.TrimSpace(h), "W/")
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != v {
		return 0, errInvalid("If-Match", "must be the block's version as read (its ETag, a positive integer, optionally quoted), not %q", h)
	}
	return n, nil
}

// blockFail answers an error of the blocks. A block over its limit is 422
// over_limit, naming the input that made it so. A replace whose old text
// does not occur exactly once is 422 no_match on "old". An edit of a
// read-only block is 409 read_only. A write whose If-Match did not hold
// is 409 conflict, with the block's version as the ETag. Anything else is
// answered as on every route.
func (s *Server) blockFail(w http.ResponseWriter, r *http.Request, op string, err error) {
	var (
		le *blocks.LimitError
		me *blocks.MatchError
		ro *blocks.ReadOnlyError
		ve *blocks.VersionError
	)
	switch {
	case errors.As(err, &le):
		writeError(w, &Error{Status: http.StatusUnprocessableEntity, Code: api.CodeOverLimit, Field: le.Field, Message: le.Error(), cause: err})
	case errors.As(err, &me):
		writeError(w, &Error{Status: http.StatusUnprocessableEntity, Code: api.CodeNoMatch, Field: "old", Message: me.Error(), cause: err})
	case errors.As(err, &ro):
		writeError(w, &Error{Status: http.StatusConflict, Code: api.CodeReadOnly, Field: "label", Message: ro.Error() + " (a PUT may still set it)", cause: err})
	case errors.As(err, &ve):
		if ve.Current > 0 {
			w.Header().Set("ETag", etag(ve.Current))
		}
		writeError(w, &Error{Status: http.StatusConflict, Code: api.CodeConflict, Field: "If-Match", Message: ve.Error(), cause: err})
	default:
		s.fail(w, r, op, err)
	}
}

// writeBlock answers a block with its version as the ETag.
func writeBlock(w http.ResponseWriter, status int, b blocks.Block) {
	w.Header().Set("ETag", etag(b.Version))
	writeJSON(w, status, apiconv.Block(b))
}

// listBlocks serves GET /v1/users/{user}/blocks and
// /v1/sessions/{id}/blocks.
func (s *Server) listBlocks(w http.ResponseWriter, r *http.Request) {
	m, owner, ok := s.blockOwner(w, r)
	if !ok {
		return
	}
	bs, err := m.List(r.Context(), Tenant(r), owner)
	if err != nil {
		s.blockFail(w, r, "blocks_list", err)
		return
	}
	writeJSON(w, http.StatusOK, api.BlocksResponse{Blocks: apiconv.Blocks(bs)})
}

// getBlock serves GET .../blocks/{label}.
func (s *Server) getBlock(w http.ResponseWriter, r *http.Request) {
	m, k, ok := s.blockKey(w, r)
	if !ok {
		return
	}
	b, err := m.Get(r.Context(), k)
	if err != nil {
		s.blockFail(w, r, "blocks_get", err)
		return
	}
	writeBlock(w, http.StatusOK, b)
}

// putBlock serves PUT .../blocks/{label}: creates the block (201, with
// Location) or rewrites it (200).
func (s *Server) putBlock(w http.ResponseWriter, r *http.Request) {
	m, k, ok := s.blockKey(w, r)
	if !ok {
		return
	}
	ifVersion, e := blockIfMatch(r)
	if e != nil {
		writeError(w, e)
		return
	}
	req, ok := readJSON[api.PutBlockRequest](s, w, r)
	if !ok {
		return
	}
	if req.Value == nil {
		writeError(w, errInvalid("value", `is required: the block's text ("" for an empty block)`))
		return
	}
	b, err := m.Set(r.Context(), blocks.SetRequest{Key: k, Value: *req.Value, Limit: req.Limit, Description: req.Description, ReadOnly: req.ReadOnly,
		Edit: blocks.Edit{By: by(req.By), IfVersion: ifVersion}})
	if err != nil {
		s.blockFail(w, r, "blocks_put", err)
		return
	}
	status := http.StatusOK
	if b.Version == 1 {
		status = http.StatusCreated
		w.Header().Set("Location", r.URL.EscapedPath())
	}
	writeBlock(w, status, b)
}

// by is who a change is recorded as.
func by(who string) string {
	if who == "" {
		return blocksBy
	}
	return who
}

// appendBlock serves POST .../blocks/{label}/append.
func (s *Server) appendBlock(w http.ResponseWriter, r *http.Request) {
	m, k, ok := s.blockKey(w, r)
	if !ok {
		return
	}
	ifVersion, e := blockIfMatch(r)
	if e != nil {
		writeError(w, e)
		return
	}
	req, ok := readJSON[api.AppendBlockRequest](s, w, r)
	if !ok {
		return
	}
	b, err := m.Append(r.Context(), k, req.Text, blocks.Edit{By: by(req.By), IfVersion: ifVersion, Agent: true})
	if err != nil {
		s.blockFail(w, r, "blocks_append", err)
		return
	}
	writeBlock(w, http.StatusOK, b)
}

// replaceBlock serves POST .../blocks/{label}/replace.
func (s *Server) replaceBlock(w http.ResponseWriter, r *http.Request) {
	m, k, ok := s.blockKey(w, r)
	if !ok {
		return
	}
	ifVersion, e := blockIfMatch(r)
	if e != nil {
		writeError(w, e)
		return
	}
	req, ok := readJSON[api.ReplaceBlockRequest](s, w, r)
	if !ok {
		return
	}
	b, err := m.Replace(r.Context(), k, req.Old, req.New, blocks.Edit{By: by(req.By), IfVersion: ifVersion, Agent: true})
	if err != nil {
		s.blockFail(w, r, "blocks_replace", err)
		return
	}
	writeBlock(w, http.StatusOK, b)
}

// deleteBlock serves DELETE .../blocks/{label}: the block and its
// history.
func (s *Server) deleteBlock(w http.ResponseWriter, r *http.Request) {
	m, k, ok := s.blockKey(w, r)
	if !ok {
		return
	}
	ifVersion, e := blockIfMatch(r)
	if e != nil {
		writeError(w, e)
		return
	}
	if err := m.Delete(r.Context(), k, blocks.Edit{By: blocksBy, IfVersion: ifVersion}); err != nil {
		s.blockFail(w, r, "blocks_delete", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// blockHistory serves GET .../blocks/{label}/history.
func (s *Server) blockHistory(w http.ResponseWriter, r *http.Request) {
	m, k, ok := s.blockKey(w, r)
	if !ok {
		return
	}
	h, err := m.History(r.Context(), k)
	if err != nil {
		s.blockFail(w, r, "blocks_history", err)
		return
	}
	writeJSON(w, http.StatusOK, api.BlockHistoryResponse{Changes: apiconv.BlockChanges(h)})
}
