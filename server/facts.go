package server

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/internal/apiconv"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/sessions"
)

// Bounds of the facts routes.
const (
	// MaxFactsK bounds k of a facts search.
	MaxFactsK = api.MaxFactsK
	// MaxRecallK bounds recall=K of the context route.
	MaxRecallK = 50
	// MaxReasonBytes bounds the reason of a forget.
	MaxReasonBytes = 1024
)

// factsMemory returns the facts memory, or false after answering 501.
func (s *Server) factsMemory(w http.ResponseWriter) (*facts.Memory, bool) {
	if s.cfg.Facts == nil {
		writeError(w, errNotConfigured("facts"))
		return nil, false
	}
	return s.cfg.Facts, true
}

// factsUser returns the checked {user} of the request's path.
func factsUser(r *http.Request) (string, *Error) {
	user := r.PathValue("user")
	if err := facts.ValidateUser(Tenant(r), user); err != nil {
		e := inputError(err)
		e.Field = "user"
		return "", e
	}
	return user, nil
}

// factView is a fact with its effective confidence.
func (s *Server) factView(m *facts.Memory, f facts.Fact) api.FactView {
	return api.FactView{Fact: apiconv.Fact(f), EffectiveConfidence: m.Confidence(f)}
}

// remember serves POST /v1/users/{user}/facts.
func (s *Server) remember(w http.ResponseWriter, r *http.Request) {
	m, ok := s.factsMemory(w)
	if !ok {
		return
	}
	user, e := factsUser(r)
	if e != nil {
		writeError(w, e)
		return
	}
	req, ok := readJSON[api.RememberRequest](s, w, r)
	if !ok {
		return
	}
	var (
		res facts.Result
		err error
	)
	if req.Supersedes != "" {
		if _, ok := s.userFact(w, r, m, user, req.Supersedes, "supersedes"); !ok {
			return
		}
		res, err = m.Supersede(r.Context(), facts.SupersedeRequest{
			Tenant: Tenant(r), ID: req.Supersedes, Text: req.Text, Confidence: req.Confidence, Source: apiconv.FactSourceFromAPI(req.Source),
			Metadata: req.Metadata, ValidFrom: req.ValidFrom, ValidTo: req.ValidTo, By: who(r),
		})
	} else {
		res, err = m.Remember(r.Context(), facts.RememberRequest{
			Tenant: Tenant(r), UserID: user, Text: req.Text, Confidence: req.Confidence, Source: apiconv.FactSourceFromAPI(req.Source),
			Metadata: req.Metadata, ValidFrom: req.ValidFrom, ValidTo: req.ValidTo,
		})
	}
	if err != nil {
		s.fail(w, r, "facts_remember", err)
		return
	}
	status := http.StatusOK
	if res.Outcome == facts.OutcomeAdded {
		status = http.StatusCreated
		w.Header().Set("Location", "/v1/users/"+url.PathEscape(user)+"/facts/"+url.PathEscape(res.Fact.ID))
	}
	out := api.RememberResponse{Outcome: string(res.Outcome), Fact: s.factView(m, res.Fact)}
	if res.Previous != nil {
		prev := s.factView(m, *res.Previous)
		out.Previous = &prev
	}
	writeJSON(w, status, out)
}

// who is who acts through the API, for the audit log: the API key, or
// "api" without one.
func who(r *http.Request) string {
	if id, ok := auth.FromContext(r.Context()); ok && id.KeyID != "" {
		return "api key " + id.KeyID
	}
	return "api"
}

// timeParam parses an RFC 3339 time query parameter; absent is zero.
func timeParam(q map[string][]string, name string) (time.Time, *Error) {
	v := first(q, name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, errInvalid(name, "must be an RFC 3339 time such as 2026-03-01T12:00:00Z, not %q", v)
	}
	return t, nil
}

// factFilter parses the filter=key:value parameters of the facts list: the
// metadata entries every fact must have.
func factFilter(q map[string][]string) (map[string]string, *Error) {
	pairs := q["filter"]
	if len(pairs) == 0 {
		return nil, nil
	}
	if len(pairs) > api.MaxFactFilters {
		return nil, errInvalid("filter", "is given %d times (at most %d)", len(pairs), api.MaxFactFilters)
	}
	md := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, ":")
		if !ok || k == "" {
			return nil, errInvalid("filter", "must be key:value (a metadata entry every fact must have), not %q", p)
		}
		if old, dup := md[k]; dup && old != v {
			return nil, errInvalid("filter", "asks for %s to be both %q and %q", k, old, v)
		}
		md[k] = v
	}
	if err := facts.CheckMetadataFilter(md); err != nil {
		e := inputError(err)
		e.Field = "filter"
		return nil, e
	}
	return md, nil
}

// listFacts serves GET /v1/users/{user}/facts: with q (or k), the user's
// facts most relevant to q, ranked by relevance times confidence; without,
// a page of the valid facts (superseded ones too with include_superseded),
// most confident first (factsCursor).
func (s *Server) listFacts(w http.ResponseWriter, r *http.Request) {
	m, ok := s.factsMemory(w)
	if !ok {
		return
	}
	user, e := factsUser(r)
	if e != nil {
		writeError(w, e)
		return
	}
	v := r.URL.Query()
	query := v.Get("q")
	if len(query) > api.MaxQueryBytes {
		writeError(w, errInvalid("q", "is %d bytes, more than the %d allowed", len(query), api.MaxQueryBytes))
		return
	}
	k, e := intParam(v, "k", 0, 1, MaxFactsK)
	if e != nil {
		writeError(w, e)
		return
	}
	size, e := intParam(v, "page_size", api.DefaultFactsPageSize, 1, api.MaxFactsPageSize)
	if e != nil {
		writeError(w, e)
		return
	}
	superseded, e := boolParam(v, "include_superseded")
	if e != nil {
		writeError(w, e)
		return
	}
	asOf, e := timeParam(v, "as_of")
	if e != nil {
		writeError(w, e)
		return
	}
	if !asOf.IsZero() && superseded {
		writeError(w, errInvalid("as_of", "lists the facts that held at a time, include_superseded every fact: give one or the other"))
		return
	}
	filter, e := factFilter(v)
	if e != nil {
		writeError(w, e)
		return
	}
	minConf := 0.0
	if s := v.Get("min_confidence"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f < 0 || f > 1 {
			writeError(w, errInvalid("min_confidence", "must be a number from 0 to 1, not %q", s))
			return
		}
		minConf = f
	}
	search := query != "" || k > 0
	for _, p := range []string{"page_size", "page_token"} {
		if search && v.Get(p) != "" {
			writeError(w, errInvalid(p, "pages the list of facts, without q or k: a search returns its k best (k from 1 to %d)", MaxFactsK))
			return
		}
	}
	out := api.FactsResponse{Facts: []api.FactView{}}
	ctx, damaged := collectDamaged(r.Context())
	if !search {
		cur := &factsCursor{at: m.Options().Clock().UTC()}
		if token := v.Get("page_token"); token != "" {
			if cur, e = parseFactsToken(token); e != nil {
				writeError(w, e)
				return
			}
		}
		fs, err := m.ListFacts(ctx, facts.ListRequest{Tenant: Tenant(r), UserID: user, IncludeSuperseded: superseded, AsOf: asOf, Metadata: filter})
		if err != nil {
			s.fail(w, r, "facts_list", err)
			return
		}
		decay := m.Options().Decay
		for _, f := range fs {
			fv := api.FactView{Fact: apiconv.Fact(f), EffectiveConfidence: decay.Effective(f, cur.at)}
			if fv.EffectiveConfidence >= minConf && cur.before(fv) {
				out.Facts = append(out.Facts, fv)
			}
		}
		sortByConfidence(out.Facts)
		if len(out.Facts) > size {
			out.Facts = out.Facts[:size]
			last := out.Facts[size-1]
			cur.conf, cur.id = last.EffectiveConfidence, last.ID
			out.NextPageToken = cur.token()
		}
		out.Damaged = damaged()
		writeJSON(w, http.StatusOK, out)
		return
	}
	hits, err := m.Search(ctx, facts.SearchRequest{
		Tenant: Tenant(r), UserID: user, Query: query, K: k, MinConfidence: minConf, IncludeSuperseded: superseded, AsOf: asOf, Metadata: filter,
	})
	if err != nil {
		s.fail(w, r, "facts_search", err)
		return
	}
	for _, h := range hits {
		rel, score := h.Relevance, h.Score
		out.Facts = append(out.Facts, api.FactView{Fact: apiconv.Fact(h.Fact), EffectiveConfidence: h.Confidence, Relevance: &rel, Score: &score})
	}
	out.Damaged = damaged()
	writeJSON(w, http.StatusOK, out)
}

// factsCursor is where a list of facts goes on. It holds the time its
// first page was read, whose effective confidences order every page:
// decay with a floor can change the order of two facts with time. It also
// holds the last fact of the previous page, its confidence then and its
// ID; a nil id means the first page. A fact remembered, reinforced or forgotten between pages
// may be missed or seen twice, as a session in the list of sessions.
type factsCursor struct {
	at   time.Time
	conf float64
	id   string
}

// before reports whether fv comes after the cursor in the list's order
// (sortByConfidence), that is, belongs to a later page.
func (c *factsCursor) before(fv api.FactView) bool {
	switch {
	case c.id == "":
		return true
	case fv.EffectiveConfidence != c.conf:
		return fv.EffectiveConfidence < c.conf
	}
	return fv.ID > c.id
}

// token returns the cursor as an opaque page token: URL-safe base64 of
// the time (Unix nanoseconds), the confidence's bits and the ID.
func (c *factsCursor) token() string {
	b := binary.BigEndian.AppendUint64(nil, uint64(c.at.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(c.conf))
	return base64.RawURLEncoding.EncodeToString(append(b, c.id...))
}

// parseFactsToken decodes a page token made by factsCursor.token.
func parseFactsToken(token string) (*factsCursor, *Error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(b) <= 16 || len(b) > 16+facts.MaxFieldBytes {
		return nil, errInvalid("page_token", "is not a next_page_token of this route: pass the one the previous page returned, or leave page_token out to read from the first fact")
	}
	c := &factsCursor{at: time.Unix(0, int64(binary.BigEndian.Uint64(b))).UTC(), conf: math.Float64frombits(binary.BigEndian.Uint64(b[8:])), id: string(b[16:])}
	if math.IsNaN(c.conf) || c.conf < 0 || c.conf > 1 {
		return nil, errInvalid("page_token", "is not a next_page_token of this route: pass the one the previous page returned, or leave page_token out to read from the first fact")
	}
	return c, nil
}

// sortByConfidence orders facts by effective confidence, highest first,
// then by ID.
func sortByConfidence(fs []api.FactView) {
	slices.SortFunc(fs, func(a, b api.FactView) int {
		switch {
		case a.EffectiveConfidence > b.EffectiveConfidence:
			return -1
		case a.EffectiveConfidence < b.EffectiveConfidence:
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// ownFact returns the fact {fact} of user {user} in the request's tenant;
// a fact of another user or tenant is not found, as a missing one.
func (s *Server) ownFact(w http.ResponseWriter, r *http.Request, m *facts.Memory) (facts.Fact, bool) {
	user, e := factsUser(r)
	if e != nil {
		writeError(w, e)
		return facts.Fact{}, false
	}
	return s.userFact(w, r, m, user, r.PathValue("fact"), "fact")
}

// userFact returns the fact id of user in the request's tenant, or false
// after answering: a bad ID is a 400 naming field, a fact of another user
// or tenant is not found, as a missing one.
func (s *Server) userFact(w http.ResponseWriter, r *http.Request, m *facts.Memory, user, id, field string) (facts.Fact, bool) {
	if e := checkFactID(id, field); e != nil {
		writeError(w, e)
		return facts.Fact{}, false
	}
	f, err := m.Get(r.Context(), Tenant(r), id)
	if err != nil && apiError(err).Status != http.StatusNotFound {
		s.fail(w, r, "facts_get", err)
		return facts.Fact{}, false
	}
	if err != nil || f.UserID != user {
		writeError(w, errNotFound("fact %q of user %q not found", id, user))
		return facts.Fact{}, false
	}
	return f, true
}

// getFact serves GET /v1/users/{user}/facts/{fact}.
func (s *Server) getFact(w http.ResponseWriter, r *http.Request) {
	m, ok := s.factsMemory(w)
	if !ok {
		return
	}
	f, ok := s.ownFact(w, r, m)
	if !ok {
		return
	}
	hist, err := m.History(r.Context(), Tenant(r), f.ID)
	if err != nil {
		s.fail(w, r, "facts_history", err)
		return
	}
	writeJSON(w, http.StatusOK, api.FactResponse{Fact: s.factView(m, f), History: apiconv.Facts(hist)})
}

// forgetFact serves DELETE /v1/users/{user}/facts/{fact}?reason=: the
// fact is deleted for good and the user's audit log records who (the API
// key) forgot it, when and why.
func (s *Server) forgetFact(w http.ResponseWriter, r *http.Request) {
	m, ok := s.factsMemory(w)
	if !ok {
		return
	}
	v := r.URL.Query()
	reason := strings.TrimSpace(v.Get("reason"))
	if reason == "" {
		reason = "forgotten through the API"
	}
	if len(reason) > MaxReasonBytes {
		writeError(w, errInvalid("reason", "is %d bytes, more than the %d allowed", len(reason), MaxReasonBytes))
		return
	}
	f, ok := s.ownFact(w, r, m)
	if !ok {
		return
	}
	if err := m.Forget(r.Context(), Tenant(r), f.ID, who(r), reason); err != nil {
		s.fail(w, r, "facts_forget", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// checkFactID checks a fact ID from a path or a body.
func checkFactID(id, field string) *Error {
	if id == "" || len(id) > facts.MaxFieldBytes || strings.ContainsAny(id, "/\x00") {
		return errInvalid(field, "%q is not a fact ID", id)
	}
	return nil
}

// updateFact serves PATCH /v1/users/{user}/facts/{fact}: a JSON merge
// patch of the fact's text, confidence, metadata and validity, recorded
// in its history with who (the API key) changed it.
func (s *Server) updateFact(w http.ResponseWriter, r *http.Request) {
	m, ok := s.factsMemory(w)
	if !ok {
		return
	}
	body, e := readBody(w, r, s.cfg.MaxBodyBytes, false)
	if e != nil {
		writeError(w, e)
		return
	}
	var patch api.FactPatch
	if e := decodeStrict(body, &patch); e != nil {
		writeError(w, e)
		return
	}
	// Which members are null, which decoding into pointers cannot tell
	// from absent ones.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		writeError(w, errInvalid("", "the body must be a JSON object"))
		return
	}
	isNull := func(name string) bool { v, ok := raw[name]; return ok && string(v) == "null" }
	for _, name := range []string{"text", "confidence", "valid_from"} {
		if isNull(name) {
			writeError(w, errInvalid(name, "cannot be null: leave it out to keep it"))
			return
		}
	}
	if len(raw) == 0 || (len(raw) == 1 && raw["reason"] != nil) {
		writeError(w, errInvalid("", "the patch changes nothing: give text, confidence, metadata, valid_from or valid_to"))
		return
	}
	if len(patch.Reason) > MaxReasonBytes {
		writeError(w, errInvalid("reason", "is %d bytes, more than the %d allowed", len(patch.Reason), MaxReasonBytes))
		return
	}
	req := facts.EditRequest{
		Tenant: Tenant(r), Text: patch.Text, Confidence: patch.Confidence, Metadata: patch.Metadata, ClearMetadata: isNull("metadata"),
		ValidFrom: patch.ValidFrom, ValidTo: patch.ValidTo, By: who(r), Reason: patch.Reason,
	}
	if isNull("valid_to") {
		req.ValidTo = &time.Time{}
	}
	if req.ValidFrom != nil && req.ValidFrom.IsZero() {
		writeError(w, errInvalid("valid_from", "must be a time after year 1"))
		return
	}
	f, ok := s.ownFact(w, r, m)
	if !ok {
		return
	}
	req.ID = f.ID
	f, err := m.Edit(r.Context(), req)
	if err != nil {
		s.fail(w, r, "facts_update", err)
		return
	}
	writeJSON(w, http.StatusOK, s.factView(m, f))
}

// factHistory serves GET /v1/users/{user}/facts/{fact}/history: every
// change of the fact, oldest first, a forgotten fact's too.
func (s *Server) factHistory(w http.ResponseWriter, r *http.Request) {
	m, ok := s.factsMemory(w)
	if !ok {
		return
	}
	user, e := factsUser(r)
	if e != nil {
		writeError(w, e)
		return
	}
	id := r.PathValue("fact")
	if e := checkFactID(id, "fact"); e != nil {
		writeError(w, e)
		return
	}
	log, err := m.Changelog(r.Context(), Tenant(r), user, id)
	if errors.Is(err, agentmem.ErrNotFound) {
		writeError(w, errNotFound("fact %q of user %q not found", id, user))
		return
	}
	if err != nil {
		s.fail(w, r, "facts_history", err)
		return
	}
	writeJSON(w, http.StatusOK, api.FactHistoryResponse{Changes: apiconv.FactChanges(log)})
}

// factsOptions reads facts=K, facts_query and facts_share: the facts the
// context route asks the sessions service to add (nil: none). With a
// budget, share × budget tokens (facts.DefaultShare by default) are kept
// out of the steps' budget for them.
func (s *Server) factsOptions(q map[string][]string) (*sessions.FactsRequest, *Error) {
	k, e := intParam(q, "facts", 0, 0, MaxFactsK)
	if e != nil {
		return nil, e
	}
	fo := &sessions.FactsRequest{K: k, Query: first(q, "facts_query"), Share: facts.DefaultShare}
	if len(fo.Query) > api.MaxQueryBytes {
		return nil, errInvalid("facts_query", "is %d bytes, more than the %d allowed", len(fo.Query), api.MaxQueryBytes)
	}
	if v := first(q, "facts_share"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0 && f <= 0.9) {
			return nil, errInvalid("facts_share", "must be a number in (0, 0.9], not %q", v)
		}
		fo.Share = f
	}
	if fo.K == 0 {
		if fo.Query != "" || first(q, "facts_share") != "" {
			return nil, errInvalid("facts", "facts_query and facts_share need facts=K (the number of facts to inject)")
		}
		return nil, nil
	}
	if !s.svc.Features().Facts {
		return nil, errNotConfigured("facts")
	}
	return fo, nil
}

// recallOptions reads recall=K: the turns of other sessions the context
// route asks the sessions service to add (nil: none), within
// facts.DefaultShare of the budget.
func (s *Server) recallOptions(q map[string][]string) (*sessions.RecallRequest, *Error) {
	k, e := intParam(q, "recall", 0, 0, MaxRecallK)
	if e != nil || k == 0 {
		return nil, e
	}
	if !s.svc.Features().Recall {
		return nil, errNotConfigured("recall")
	}
	return &sessions.RecallRequest{K: k, Share: facts.DefaultShare}, nil
}

// first returns the first value of a query parameter.
func first(q map[string][]string, name string) string {
	if vs := q[name]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// extractBody is the body of POST /v1/users/{user}/facts/extract as the
// server decodes it: the messages are decoded by the OpenAI message
// decoder (render.DecodeOpenAIMessages), as those of POST /messages: an
// array of them, or one.
type extractBody struct {
	Messages json.RawMessage `json:"messages"`
	Source   api.FactSource  `json:"source"`
}

// extractFacts serves POST /v1/users/{user}/facts/extract: the server's
// extractor learns from a turn, and its decisions are applied to the
// user's facts at once (facts.Memory.Extract).
func (s *Server) extractFacts(w http.ResponseWriter, r *http.Request) {
	m, ok := s.factsMemory(w)
	if !ok {
		return
	}
	if s.cfg.Extractor == nil {
		writeError(w, errNotConfigured("fact extraction (an LLM: serve --llm-base-url)"))
		return
	}
	user, e := factsUser(r)
	if e != nil {
		writeError(w, e)
		return
	}
	req, ok := readJSON[extractBody](s, w, r)
	if !ok {
		return
	}
	if len(req.Messages) == 0 || string(req.Messages) == "null" {
		writeError(w, errInvalid("messages", "is required: an array of OpenAI chat messages (the turn to learn from)"))
		return
	}
	raw := bytes.TrimSpace(req.Messages)
	if raw[0] == '{' { // one message, as POST /messages takes it
		raw = append(append([]byte{'['}, raw...), ']')
	}
	msgs, err := render.DecodeOpenAIMessages(raw)
	if err != nil {
		writeError(w, inputError(err))
		return
	}
	switch {
	case len(msgs) == 0:
		writeError(w, errInvalid("messages", "is empty: send at least one message"))
		return
	case len(msgs) > api.MaxStepsPerRequest:
		writeError(w, errInvalid("messages", "has %d messages; at most %d per request", len(msgs), api.MaxStepsPerRequest))
		return
	}
	ex, err := m.Extract(r.Context(), s.cfg.Extractor, facts.Turn{
		Tenant: Tenant(r), UserID: user, Messages: msgs, Source: apiconv.FactSourceFromAPI(req.Source),
	})
	if err != nil {
		var xe *facts.ExtractionError
		if errors.As(err, &xe) {
			s.log.Warn("facts extract: the extractor failed", "user", user, "attempts", xe.Attempts, "err", err)
			writeError(w, &Error{Status: http.StatusBadGateway, Code: api.CodeExtractionFailed, Field: "extractor",
				Message: "the fact extractor failed; nothing was written: " + xe.Err.Error(), RetryAfter: 1, cause: err})
			return
		}
		s.fail(w, r, "facts_extract", err)
		return
	}
	out := api.ExtractFactsResponse{Decisions: make([]api.ExtractedDecision, len(ex.Decisions))}
	for i, d := range ex.Decisions {
		res := ex.Results[i]
		x := api.ExtractedDecision{Action: string(d.Op), Outcome: string(res.Outcome)}
		if res.Fact.ID != "" {
			v := s.factView(m, res.Fact)
			x.Fact = &v
		}
		if res.Previous != nil {
			v := s.factView(m, *res.Previous)
			x.Previous = &v
		}
		out.Decisions[i] = x
	}
	writeJSON(w, http.StatusOK, out)
}
