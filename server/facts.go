package server

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/internal/apiconv"
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
	body, e := readBody(w, r, s.cfg.MaxBodyBytes, false)
	if e != nil {
		writeError(w, e)
		return
	}
	var req api.RememberRequest
	if e := decodeStrict(body, &req); e != nil {
		writeError(w, e)
		return
	}
	res, err := m.Remember(r.Context(), facts.RememberRequest{
		Tenant: Tenant(r), UserID: user, Text: req.Text, Confidence: req.Confidence, Source: apiconv.FactSourceFromAPI(req.Source), Metadata: req.Metadata,
	})
	if err != nil {
		s.fail(w, r, "facts_remember", err)
		return
	}
	status := http.StatusOK
	if res.Outcome == facts.OutcomeAdded {
		status = http.StatusCreated
		w.Header().Set("Location", "/v1/users/"+url.PathEscape(user)+"/facts/"+url.PathEscape(res.Fact.ID))
	}
	writeJSON(w, status, api.RememberResponse{Outcome: string(res.Outcome), Fact: s.factView(m, res.Fact)})
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
		fs, err := m.List(ctx, Tenant(r), user, superseded)
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
		Tenant: Tenant(r), UserID: user, Query: query, K: k, MinConfidence: minConf, IncludeSuperseded: superseded,
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

// factsCursor is where a list of facts goes on: the time its first page
// was read, whose effective confidences order every page (decay with a
// floor can change the order of two facts with time), and the last fact
// of the previous page (its confidence then, and its ID); nil id: the
// first page. A fact remembered, reinforced or forgotten between pages
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
	id := r.PathValue("fact")
	if id == "" || len(id) > facts.MaxFieldBytes || strings.ContainsAny(id, "/\x00") {
		writeError(w, errInvalid("fact", "%q is not a fact ID", id))
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
	by := "api"
	if id, ok := auth.FromContext(r.Context()); ok && id.KeyID != "" {
		by = "api key " + id.KeyID
	}
	if err := m.Forget(r.Context(), Tenant(r), f.ID, by, reason); err != nil {
		s.fail(w, r, "facts_forget", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
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
	if !s.svc.HasFacts() {
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
	if !s.svc.HasRecall() {
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
