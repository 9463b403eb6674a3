package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/recall"
)

// errNotConfigured is the answer of a route whose backend the server was
// not given.
func errNotConfigured(what string) *Error {
	return &Error{Status: http.StatusNotImplemented, Code: api.CodeNotConfigured, Message: what + " is not configured on this server"}
}

// recallIndex returns the recall index, or false after answering 501.
func (s *Server) recallIndex(w http.ResponseWriter) (*recall.Index, bool) {
	if s.cfg.Recall == nil {
		writeError(w, errNotConfigured("recall"))
		return nil, false
	}
	return s.cfg.Recall, true
}

// upsertRecall serves POST /v1/recall: documents into the tenant's index.
func (s *Server) upsertRecall(w http.ResponseWriter, r *http.Request) {
	ix, ok := s.recallIndex(w)
	if !ok {
		return
	}
	body, e := readBody(w, r, s.cfg.MaxBodyBytes, false)
	if e != nil {
		writeError(w, e)
		return
	}
	docs, e := decodeUpsertRecall(body, Tenant(r))
	if e != nil {
		writeError(w, e)
		return
	}
	if err := ix.Upsert(r.Context(), docs...); err != nil {
		s.fail(w, r, "recall_upsert", err)
		return
	}
	out := api.UpsertRecallResponse{IDs: make([]string, len(docs))}
	for i, d := range docs {
		out.IDs[i] = d.ID
	}
	writeJSON(w, http.StatusOK, out)
}

// decodeUpsertRecall decodes and checks the body of POST /v1/recall.
func decodeUpsertRecall(body []byte, tenant string) ([]recall.Doc, *Error) {
	var req api.UpsertRecallRequest
	if e := decodeStrict(body, &req); e != nil {
		return nil, e
	}
	if len(req.Documents) == 0 {
		return nil, errInvalid("documents", "must hold at least one document")
	}
	if len(req.Documents) > api.MaxRecallDocuments {
		return nil, errInvalid("documents", "holds %d documents, more than the %d of one request", len(req.Documents), api.MaxRecallDocuments)
	}
	docs := make([]recall.Doc, len(req.Documents))
	seen := make(map[string]bool, len(req.Documents))
	for i, d := range req.Documents {
		if d.ID == "" {
			d.ID = agentmem.NewID()
		}
		if seen[d.ID] {
			return nil, errInvalid("documents["+strconv.Itoa(i)+"].id", "%q is given twice", d.ID)
		}
		seen[d.ID] = true
		doc := recall.Doc{ID: d.ID, Tenant: tenant, Text: d.Text, Metadata: d.Metadata, Group: d.Group, Seq: d.Seq,
			Embedding: d.Embedding, EmbeddingModel: d.EmbeddingModel}
		if d.Time != nil {
			doc.Time = *d.Time
		}
		checked, err := recall.CheckDoc(doc)
		if err != nil {
			e := inputError(err)
			e.Field = prefixField("documents["+strconv.Itoa(i)+"]", e.Field)
			return nil, e
		}
		docs[i] = checked
	}
	return docs, nil
}

// searchRecall serves GET /v1/recall/search?q=&k=&offset=&scope=&before=&after=:
// the k hits after the offset best, as many as fit in
// api.MaxRecallSearchBytes (NextOffset says where the rest start).
func (s *Server) searchRecall(w http.ResponseWriter, r *http.Request) {
	ix, ok := s.recallIndex(w)
	if !ok {
		return
	}
	q, e := decodeRecallSearch(r, Tenant(r))
	if e != nil {
		writeError(w, e)
		return
	}
	offset, e := intParam(r.URL.Query(), "offset", 0, 0, api.MaxRecallOffset)
	if e != nil {
		writeError(w, e)
		return
	}
	fresh, e := boolParam(r.URL.Query(), "fresh")
	if e != nil {
		writeError(w, e)
		return
	}
	if fresh && !s.waitForIndex(w, r) {
		return
	}
	ctx, damaged := collectDamaged(r.Context())
	q.K += offset
	hits, err := ix.Search(ctx, q)
	if err != nil {
		s.fail(w, r, "recall_search", err)
		return
	}
	hits = hits[min(offset, len(hits)):]
	out := api.RecallSearchResponse{Hits: make([]api.RecallHit, 0, len(hits))}
	size := 0
	for i, h := range hits {
		hit := recallHit(h)
		b, err := json.Marshal(hit)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		if size += len(b) + 1; i > 0 && size > api.MaxRecallSearchBytes {
			out.NextOffset = offset + i
			break
		}
		out.Hits = append(out.Hits, hit)
	}
	out.Damaged = damaged()
	writeJSON(w, http.StatusOK, out)
}

// waitForIndex waits, at most Config.IndexWait, until the recall index
// has every write committed before the request (read-your-writes), and
// answers 503 index_behind when it has not. A server whose index is
// written with each write has nothing to wait for.
func (s *Server) waitForIndex(w http.ResponseWriter, r *http.Request) bool {
	if s.index == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.IndexWait)
	defer cancel()
	err := s.index.Sync(ctx)
	switch {
	case err == nil:
		return true
	case r.Context().Err() != nil:
		s.fail(w, r, "recall_search", r.Context().Err())
	case errors.Is(err, context.DeadlineExceeded):
		writeError(w, &Error{Status: http.StatusServiceUnavailable, Code: api.CodeIndexBehind, RetryAfter: 1,
			Message: fmt.Sprintf("the recall index has not reached the writes made before this search within %v; retry, or search without fresh=true to get what it has indexed", s.cfg.IndexWait), cause: err})
	default:
		s.fail(w, r, "recall_search", err)
	}
	return false
}

// decodeRecallSearch checks the query parameters of a recall search.
// scope is "session:ID", "user:ID" or "agent:ID"; absent, the search
// covers the tenant's whole index. Each filter is "key:value", a metadata
// pair every hit must have (see recall.AddFilters); similarity is "bm25"
// (the default) or "tfidf".
func decodeRecallSearch(r *http.Request, tenant string) (recall.Query, *Error) {
	v := r.URL.Query()
	text := v.Get("q")
	if strings.TrimSpace(text) == "" {
		return recall.Query{}, errInvalid("q", "is required: the text to search for")
	}
	if len(text) > api.MaxQueryBytes {
		return recall.Query{}, errInvalid("q", "is %d bytes, more than the %d allowed", len(text), api.MaxQueryBytes)
	}
	if !utf8.ValidString(text) || strings.ContainsRune(text, 0) {
		return recall.Query{}, errInvalid("q", "is not valid UTF-8 text (or holds a NUL byte)")
	}
	k, e := intParam(v, "k", api.DefaultRecallK, 1, api.MaxRecallK)
	if e != nil {
		return recall.Query{}, e
	}
	before, e := intParam(v, "before", 0, 0, api.MaxRecallWindow)
	if e != nil {
		return recall.Query{}, e
	}
	after, e := intParam(v, "after", 0, 0, api.MaxRecallWindow)
	if e != nil {
		return recall.Query{}, e
	}
	f, err := recall.ParseScope(v.Get("scope"))
	if err != nil {
		return recall.Query{}, inputError(err)
	}
	if f, err = recall.AddFilters(f, v["filter"]); err != nil {
		return recall.Query{}, inputError(err)
	}
	sim, err := recall.ParseSimilarity(v.Get("similarity"))
	if err != nil {
		return recall.Query{}, inputError(err)
	}
	return recall.Query{Tenant: tenant, Text: text, K: k, Filter: f, Before: before, After: after, Similarity: sim}, nil
}

// recallDocument converts a document of the index.
func recallDocument(d recall.Doc) api.RecallDocument {
	out := api.RecallDocument{ID: d.ID, Text: d.Text, Metadata: d.Metadata, Group: d.Group, Seq: d.Seq, EmbeddingModel: d.EmbeddingModel}
	if !d.Time.IsZero() {
		t := d.Time
		out.Time = &t
	}
	return out
}

// recallHit converts a search hit, naming the session and step of a
// conversation turn.
func recallHit(h recall.Hit) api.RecallHit {
	out := api.RecallHit{RecallDocument: recallDocument(h.Doc), Score: h.Score}
	if sid := h.Doc.Metadata[recall.MetaSession]; sid != "" {
		if step, err := strconv.ParseInt(h.Doc.Metadata[recall.MetaStep], 10, 64); err == nil {
			out.SessionID, out.Step = sid, step
		}
	}
	for _, d := range h.Window {
		out.Window = append(out.Window, recallDocument(d))
	}
	return out
}

// recallDocID returns the checked {doc} of the request's path.
func recallDocID(r *http.Request) (string, *Error) {
	id := r.PathValue("doc")
	if err := recall.CheckID(id); err != nil {
		e := inputError(err)
		e.Field = "doc"
		return "", e
	}
	return id, nil
}

// recallDocRoute returns the index and the checked {doc} of a route on
// one document, or false after answering.
func (s *Server) recallDocRoute(w http.ResponseWriter, r *http.Request) (*recall.Index, string, bool) {
	ix, ok := s.recallIndex(w)
	if !ok {
		return nil, "", false
	}
	id, e := recallDocID(r)
	if e != nil {
		writeError(w, e)
		return nil, "", false
	}
	return ix, id, true
}

// getRecall serves GET /v1/recall/{doc}.
func (s *Server) getRecall(w http.ResponseWriter, r *http.Request) {
	ix, id, ok := s.recallDocRoute(w, r)
	if !ok {
		return
	}
	d, err := ix.Get(r.Context(), Tenant(r), id)
	if err != nil {
		s.fail(w, r, "recall_get", recallErr(id, err))
		return
	}
	writeJSON(w, http.StatusOK, recallDocument(d))
}

// deleteRecall serves DELETE /v1/recall/{doc}.
func (s *Server) deleteRecall(w http.ResponseWriter, r *http.Request) {
	ix, id, ok := s.recallDocRoute(w, r)
	if !ok {
		return
	}
	n, err := ix.Delete(r.Context(), Tenant(r), id)
	if err != nil {
		s.fail(w, r, "recall_delete", err)
		return
	}
	if n == 0 {
		writeError(w, errNotFound("recall document %q not found", id))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// recallErr maps a not-found error of the index to the route's 404.
func recallErr(id string, err error) error {
	if apiError(err).Status == http.StatusNotFound {
		return errNotFound("recall document %q not found", id)
	}
	return err
}
