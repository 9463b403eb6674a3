package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/facts"
	chatproxy "github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
	"github.com/agentmem/agentmem/views"
	"github.com/agentmem/agentmem/views/recallview"
	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of Config.
const (
	DefaultMaxBodyBytes = 8 << 20
	DefaultReadyTimeout = 2 * time.Second
	// DefaultCacheBytes (256 MiB) bounds the context cache when
	// Config.CacheBytes is 0. It keeps the server's heap small enough for
	// a small machine, however many and large the sessions; what it holds
	// is measured in docs/benchmarks.md. A miss costs one read of the
	// session, not correctness: the log stays the truth.
	DefaultCacheBytes = sessions.DefaultCacheBytes
	// DefaultMaxContextTokens (1,000,000) is Config.MaxContextTokens when
	// it is 0. It is the largest context window of current models
	// (GPT-4.1, Gemini), so no model needs a larger context. A response
	// is then a few MB of JSON, not the whole of a long session.
	DefaultMaxContextTokens = sessions.DefaultMaxContextTokens
	DefaultIndexWait        = 5 * time.Second
)

// Config configures a Server. Only Store is required.
type Config struct {
	// Store holds the sessions. The server does not close it.
	Store *store.Store
	// Logger receives the server's logs; nil means slog.Default().
	Logger *slog.Logger
	// MaxBodyBytes bounds request bodies (413 beyond it); 0 means
	// DefaultMaxBodyBytes (8 MiB).
	MaxBodyBytes int64
	// DefaultTokenizer is the token counter of the context route when
	// the request names none; empty means o200k_base.
	DefaultTokenizer string
	// CacheBytes bounds the size of the session memories the context
	// route keeps in memory. The cache counts the steps' JSON and the
	// rendered forms it keeps, estimated high. The least recently used
	// go first, and a session larger than the bound is served without
	// being kept. 0 means DefaultCacheBytes (256 MiB);
	// a negative value keeps none beyond the request that loaded it.
	CacheBytes int64
	// MaxContextTokens is the most tokens a context holds: a context
	// request without a budget is fitted to it (the steps left out are in
	// its dropped list, as with a budget), and a larger budget is refused
	// with 400. 0 means DefaultMaxContextTokens; at most MaxBudget.
	MaxContextTokens int
	// Summarizer, when set, is the "llm" summarizer of the compact route
	// (and its default); the extractive one is always available.
	Summarizer agentmem.Summarizer
	// Sessions, when set, is the sessions service the routes call, shared
	// with the other transports of the process (MCP, the inspector) so
	// that they serve sessions the same way from one context cache. It
	// must be over Store; DefaultTokenizer, CacheBytes, MaxContextTokens
	// and Summarizer are then its own. Nil: the server makes one over
	// Store with them.
	Sessions *sessions.Service
	// Registerer and Gatherer are where the metrics go and where /metrics
	// reads them; nil means a registry of the server's own with the Go
	// and process collectors.
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	// ReadyTimeout bounds the store ping of /readyz; 0 means
	// DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Clock returns the current time; nil means time.Now. Step times the
	// client leaves out come from it.
	Clock func() time.Time
	// Auth authenticates requests and gives each its tenant (see package
	// auth). Nil means no authentication: every request is the default
	// tenant "", for a server embedded behind authentication of its own.
	// /healthz, /readyz, /metrics and /v1/openapi.json never need a key.
	Auth *auth.Authenticator
	// CORSOrigins are the browser origins (scheme://host[:port], exact
	// match, no wildcard) whose pages may call the API; empty means CORS
	// is off and browsers refuse cross-origin reads. Cross-origin writes
	// from any other origin are refused with 403 either way.
	CORSOrigins []string
	// Recall, when set, serves the recall routes (/v1/recall...): the
	// tenant's documents and every conversation turn indexed into it (by
	// RecallFollower). Nil answers them 501.
	Recall *recall.Index
	// RecallFollower, when set, is the view that indexes the store's log
	// into Recall (recallview.Start). The server reports its progress in
	// /readyz and /metrics. It waits for it on a fresh recall search, and
	// after deleting a session so that what was deleted is not found.
	// The writes of a sessions service the server makes wake it; those of
	// a Sessions given must (sessions.Service.NotifyWrites).
	RecallFollower *recallview.Follower
	// FactExtraction, when set, is the follower of the fact extraction
	// that follows the store's log (factextract.Learner's): the server
	// reports its progress and its lease in /readyz and /metrics.
	FactExtraction *views.Follower
	// IndexWait bounds how long a recall search with fresh=true waits for
	// the index to reach every write committed before it; 0 means
	// DefaultIndexWait.
	IndexWait time.Duration
	// Facts, when set, serves the user facts routes
	// (/v1/users/{user}/facts...). Nil answers them 501.
	Facts *facts.Memory
	// Extractor, when set with Facts, serves POST
	// /v1/users/{user}/facts/extract: it learns facts from a turn (an
	// LLM, facts.LLMExtractor). Nil answers that route 501.
	Extractor facts.Extractor
	// Blocks, when set, serves the memory blocks routes
	// (/v1/users/{user}/blocks..., /v1/sessions/{id}/blocks...) and is the
	// blocks the contexts of the server's own sessions service show (a
	// Sessions given must have them as its Config.Blocks). Nil answers
	// the routes 501.
	Blocks *blocks.Memory
	// MCP, when set, is served at /mcp (the MCP streamable HTTP
	// transport), behind the same authentication as the API.
	MCP http.Handler
	// Inspector, when set, is served under InspectorPatterns (the web
	// inspector's pages: "/" and the paths below it that the API does not
	// use), behind the same authentication as the API.
	Inspector http.Handler
	// InspectorPatterns are the mux patterns of Inspector.
	InspectorPatterns []string
	// Proxy, when set, serves the OpenAI- and Anthropic-compatible routes
	// POST /v1/chat/completions and POST /v1/messages (package proxy);
	// nil answers them 400 upstream_not_configured. It must use the
	// server's sessions service (Sessions).
	Proxy *chatproxy.Proxy
}

// Pinger is implemented by stores that can tell whether they can serve
// (store.Pinger: every backend of this module). /readyz uses it; for a
// store without it, /readyz lists one session instead.
type Pinger = store.Pinger

// Server serves the agentmem HTTP API. It is an http.Handler; create it
// with New and call Close when done.
type Server struct {
	cfg     Config
	store   *store.Store
	log     *slog.Logger
	mux     *http.ServeMux
	metrics *metrics
	svc     *sessions.Service
	ownSvc  bool // svc was made by New (not Config.Sessions)
	counter tokenizer.Counter
	now     func() time.Time
	sec     *security
	index   *recallview.Follower // the recall index's follower of the log, if any
	extract *views.Follower      // the fact extraction's follower of the log, if any
	open    map[string]bool      // route pattern: needs no key
	browser map[string]bool      // route pattern: a page for browsers (Basic auth too)

	closeOnce sync.Once
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("server: Config.Store is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.DefaultTokenizer == "" {
		cfg.DefaultTokenizer = tokenizer.O200kBase
	}
	counter, err := tokenizer.Get(cfg.DefaultTokenizer)
	if err != nil {
		return nil, fmt.Errorf("server: Config.DefaultTokenizer: %w", err)
	}
	if cfg.CacheBytes == 0 {
		cfg.CacheBytes = DefaultCacheBytes
	}
	if cfg.MaxContextTokens == 0 {
		cfg.MaxContextTokens = DefaultMaxContextTokens
	}
	if cfg.MaxContextTokens < 0 || cfg.MaxContextTokens > MaxBudget {
		return nil, fmt.Errorf("server: Config.MaxContextTokens %d is not from 1 to %d", cfg.MaxContextTokens, MaxBudget)
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	m, err := newMetrics(cfg.Registerer, cfg.Gatherer)
	if err != nil {
		return nil, fmt.Errorf("server: registering metrics: %w", err)
	}
	sec, err := newSecurity(&cfg)
	if err != nil {
		return nil, err
	}
	if cfg.IndexWait <= 0 {
		cfg.IndexWait = DefaultIndexWait
	}
	s := &Server{cfg: cfg, store: cfg.Store, log: cfg.Logger, mux: http.NewServeMux(), metrics: m, counter: counter, now: cfg.Clock, sec: sec}
	if s.index = cfg.RecallFollower; s.index != nil {
		if err := m.watchIndex(s.index); err != nil {
			return nil, fmt.Errorf("server: registering metrics: %w", err)
		}
	}
	if s.extract = cfg.FactExtraction; s.extract != nil {
		if err := m.watchExtraction(s.extract); err != nil {
			return nil, fmt.Errorf("server: registering metrics: %w", err)
		}
	}
	if s.svc = cfg.Sessions; s.svc == nil {
		cacheBytes := cfg.CacheBytes
		if cacheBytes < 0 {
			cacheBytes = -1 // no cache
		}
		if s.svc, err = sessions.New(sessions.Config{Store: cfg.Store, Counter: counter, Clock: cfg.Clock, CacheBytes: cacheBytes,
			MaxContextTokens: cfg.MaxContextTokens, Summarizer: cfg.Summarizer, Logger: cfg.Logger, Facts: cfg.Facts, Recall: cfg.Recall, Blocks: cfg.Blocks}); err != nil {
			return nil, err
		}
		s.ownSvc = true
		if s.index != nil {
			s.svc.NotifyWrites(s.index.Notify) // the service lives as long as the server
		}
	}
	s.counter = s.svc.Counter()
	s.cfg.MaxContextTokens = s.svc.MaxContextTokens()
	s.svc.Observe(m)
	if cfg.Proxy != nil {
		cfg.Proxy.Observe(m)
	}
	s.routes()
	return s, nil
}

// Close releases the server's caches (those of its sessions service, when
// it made it). It does not close the store; it is safe to call more than
// once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		if s.ownSvc {
			s.svc.DropCache()
		}
	})
	return nil
}

// Sessions returns the sessions service the server's routes call.
func (s *Server) Sessions() *sessions.Service { return s.svc }

// route is one route of the API: the ServeMux pattern, its handler, and
// whether it is open (needs no API key: operations and the API's
// description, which hold no tenant's data).
type route struct {
	pattern string
	handler http.HandlerFunc
	open    bool
	// params are the query parameters the route takes; any other, or one
	// given twice, is refused with 400 before the handler runs (a
	// misspelt parameter would otherwise be ignored silently).
	params []string
}

// routeTable lists every route. The OpenAPI document must describe
// exactly these (a test checks it).
func (s *Server) routeTable() []route {
	return []route{
		{"GET /healthz", s.healthz, true, nil},
		{"GET /readyz", s.readyz, true, nil},
		{"GET /metrics", s.metrics.handler.ServeHTTP, true, nil},
		{"GET /v1/openapi.json", s.serveOpenAPI, true, nil},
		{"POST /v1/sessions", s.createSession, false, nil},
		{"GET /v1/sessions", s.listSessions, false, []string{"user_id", "agent", "parent_id", "page_size", "page_token"}},
		{"GET /v1/sessions/{id}", s.getSession, false, nil},
		{"DELETE /v1/sessions/{id}", s.deleteSession, false, nil},
		{"POST /v1/sessions/{id}/fork", s.forkSession, false, nil},
		{"POST /v1/sessions/{id}/steps", s.appendSteps, false, nil},
		{"GET /v1/sessions/{id}/steps", s.readSteps, false, []string{"after", "limit", "last"}},
		{"POST /v1/sessions/{id}/messages", s.appendMessages, false, []string{"flush_pending"}},
		{"POST /v1/sessions/{id}/pop", s.pop, false, nil},
		{"POST /v1/sessions/{id}/items", s.appendItems, false, nil},
		{"GET /v1/sessions/{id}/items", s.readItems, false, []string{"limit", "page_size", "page_token"}},
		{"POST /v1/sessions/{id}/items/pop", s.popItem, false, nil},
		{"DELETE /v1/sessions/{id}/items", s.clearItems, false, nil},
		{"GET /v1/sessions/{id}/context", s.getContext, false, []string{"budget", "format", "tokenizer", "truncate", "facts", "facts_query", "facts_share", "recall"}},
		{"POST /v1/sessions/{id}/compact", s.compact, false, nil},
		{"POST /v1/recall", s.upsertRecall, false, nil},
		{"GET /v1/recall/search", s.searchRecall, false, []string{"q", "k", "offset", "scope", "before", "after", "fresh", "filter...", "similarity"}},
		{"GET /v1/recall/{doc}", s.getRecall, false, nil},
		{"DELETE /v1/recall/{doc}", s.deleteRecall, false, nil},
		{"DELETE /v1/users/{user}", s.forgetUser, false, []string{"reason"}},
		{"POST /v1/users/{user}/facts", s.remember, false, nil},
		{"GET /v1/users/{user}/facts", s.listFacts, false, []string{"q", "k", "min_confidence", "include_superseded", "as_of", "filter...", "page_size", "page_token"}},
		{"POST /v1/users/{user}/facts/extract", s.extractFacts, false, nil},
		{"GET /v1/users/{user}/facts/{fact}", s.getFact, false, nil},
		{"PATCH /v1/users/{user}/facts/{fact}", s.updateFact, false, nil},
		{"GET /v1/users/{user}/facts/{fact}/history", s.factHistory, false, nil},
		{"DELETE /v1/users/{user}/facts/{fact}", s.forgetFact, false, []string{"reason"}},
		{"GET /v1/users/{user}/blocks", s.listBlocks, false, nil},
		{"GET /v1/users/{user}/blocks/{label}", s.getBlock, false, nil},
		{"PUT /v1/users/{user}/blocks/{label}", s.putBlock, false, nil},
		{"DELETE /v1/users/{user}/blocks/{label}", s.deleteBlock, false, nil},
		{"POST /v1/users/{user}/blocks/{label}/append", s.appendBlock, false, nil},
		{"POST /v1/users/{user}/blocks/{label}/replace", s.replaceBlock, false, nil},
		{"GET /v1/users/{user}/blocks/{label}/history", s.blockHistory, false, nil},
		{"GET /v1/sessions/{id}/blocks", s.listBlocks, false, nil},
		{"GET /v1/sessions/{id}/blocks/{label}", s.getBlock, false, nil},
		{"PUT /v1/sessions/{id}/blocks/{label}", s.putBlock, false, nil},
		{"DELETE /v1/sessions/{id}/blocks/{label}", s.deleteBlock, false, nil},
		{"POST /v1/sessions/{id}/blocks/{label}/append", s.appendBlock, false, nil},
		{"POST /v1/sessions/{id}/blocks/{label}/replace", s.replaceBlock, false, nil},
		{"GET /v1/sessions/{id}/blocks/{label}/history", s.blockHistory, false, nil},
		{"POST /v1/chat/completions", s.chatCompletions, false, nil},
		{"POST /v1/messages", s.messagesProxy, false, []string{"beta"}},
	}
}

func (s *Server) routes() {
	s.open = map[string]bool{}
	for _, rt := range s.routeTable() {
		h := rt.handler
		if !rt.open {
			h = checkParams(rt.params, h)
		}
		s.mux.HandleFunc(rt.pattern, h)
		s.open[rt.pattern] = rt.open
	}
	// The MCP endpoint and the inspector are not JSON API routes (the
	// OpenAPI document leaves them out) but need a key as the API does.
	if s.cfg.MCP != nil {
		limit := s.cfg.MaxBodyBytes
		mcp := s.cfg.MCP
		s.mux.Handle(MCPPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
			mcp.ServeHTTP(w, r)
		}))
		s.open[MCPPath] = false
	}
	s.browser = map[string]bool{}
	if s.cfg.Inspector != nil {
		for _, p := range s.cfg.InspectorPatterns {
			s.mux.Handle(p, s.cfg.Inspector)
			s.open[p] = false
			s.browser[p] = true
		}
	}
}

// checkParams refuses a request whose query has a parameter outside
// params, or one given twice, before h runs.
func checkParams(params []string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "" {
			if e := onlyParams(r.URL.Query(), params...); e != nil {
				writeError(w, e)
				return
			}
		}
		h(w, r)
	}
}

// MCPPath is where Config.MCP is served.
const MCPPath = "/mcp"

// ServeHTTP implements http.Handler: it routes the request, runs the
// security layer (CORS, cross-origin protection, authentication: see
// security.go), recovers a panic into a 500, answers unknown routes with
// JSON errors and records the request's metrics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	// The mux's own handler for unmatched requests (404, 405, a redirect
	// to the cleaned path) writes text; unmatched rewrites it as JSON.
	// Matched requests go through the mux itself, which sets the path
	// values.
	var h http.Handler = s.mux
	h404, route := s.mux.Handler(r)
	if route == "" {
		route = "unmatched"
		h = s.unmatched(h404)
	}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("panic serving a request", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if !sw.wrote {
				writeError(sw, &Error{Status: http.StatusInternalServerError, Code: api.CodeInternal, Message: "internal error"})
			}
		}
		d := time.Since(start)
		s.metrics.observe(route, methodLabel(r.Method), sw.status(), d)
		if sw.status() >= 500 {
			s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", sw.status(), "duration", d)
		} else if s.log.Enabled(r.Context(), slog.LevelDebug) {
			s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "route", route, "status", sw.status(), "duration", d)
		}
	}()
	var guarded *http.Request
	var ok bool
	if proxyPatterns[route] {
		guarded, ok = s.proxyGuard(sw, r)
	} else {
		guarded, ok = s.guard(sw, r, s.open[route], s.browser[route])
	}
	if !ok {
		return
	}
	// The damaged records the request's reads leave out are logged and
	// counted; the routes that list things also name them in their
	// answers (collectDamaged).
	h.ServeHTTP(sw, guarded.WithContext(agentmem.WithDamageReporter(guarded.Context(), func(d *agentmem.DamagedError) {
		s.metrics.damaged.WithLabelValues(d.Kind).Inc()
		s.log.Error("damaged record left out", "kind", d.Kind, "tenant", d.Tenant, "id", d.ID, "err", d.Err,
			"method", r.Method, "path", r.URL.Path)
	})))
}

// unmatched answers a request no route matches: the mux's own 404, 405
// or redirect, with a JSON error body instead of its text one.
func (s *Server) unmatched(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &bufferedWriter{header: http.Header{}}
		h.ServeHTTP(rec, r)
		for k, v := range rec.header {
			if k != "Content-Type" && k != "Content-Length" && k != "X-Content-Type-Options" {
				w.Header()[k] = v
			}
		}
		switch rec.code {
		case http.StatusNotFound:
			writeError(w, errNotFound("no route for %s %s", r.Method, r.URL.Path))
		case http.StatusMethodNotAllowed:
			writeError(w, &Error{Status: http.StatusMethodNotAllowed, Code: api.CodeMethodNotAllowed,
				Message: fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, rec.header.Get("Allow"))})
		default: // a redirect to the cleaned path
			w.WriteHeader(rec.code)
			_, _ = w.Write(rec.body.Bytes())
		}
	})
}

// methodLabel keeps the metrics' method label to a known set.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// statusWriter remembers the status of a response.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.code, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) status() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.code
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// bufferedWriter records a response.
type bufferedWriter struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (w *bufferedWriter) Header() http.Header { return w.header }
func (w *bufferedWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *bufferedWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if w.body.Len() < 4096 {
		w.body.Write(b)
	}
	return len(b), nil
}

// fail writes err as an error response, counting and logging the errors
// that are the server's fault: a store that is unavailable (503) as a
// warning, a failure nobody expected (500) as an error, with its cause.
// A write that other writers of its session kept getting ahead of (503,
// store.ErrContended) is logged as a warning, and counted by
// agentmem_write_contended_total, not as the store's error.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, op string, err error) {
	e := apiError(err)
	switch {
	case errors.Is(err, store.ErrContended):
		// Not the store's failure: agentmem_write_retries_total counts it.
		s.log.Warn("write contended", "op", op, "method", r.Method, "path", r.URL.Path, "err", err)
	case e.Status == http.StatusInternalServerError:
		s.metrics.storeErrors.WithLabelValues(op).Inc()
		s.log.Error("internal error", "op", op, "method", r.Method, "path", r.URL.Path, "err", err)
	case e.Status >= 500:
		s.metrics.storeErrors.WithLabelValues(op).Inc()
		s.log.Warn("store unavailable", "op", op, "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeError(w, e)
}

// internal answers 500 for an error that is nobody's fault but the
// server's, and logs it.
func (s *Server) internal(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error("internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	writeError(w, errInternal(err))
}

// sessionID returns the checked {id} of the request's path.
func sessionID(r *http.Request) (string, *Error) {
	id := r.PathValue("id")
	if err := checkID("id", id); err != nil {
		return "", err
	}
	return id, nil
}

// healthz answers that the process is up.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers whether the store can serve (store.Pinger: it answers,
// and it can write): 200, or 503 with Retry-After and the reason. What
// the store holds does not count: a damaged record fails only the reads
// of it.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.ReadyTimeout)
	defer cancel()
	var err error
	if s.store.Supports(store.CanPing) {
		err = s.store.Ping(ctx)
	} else {
		_, err = s.store.List(ctx, store.ListRequest{PageSize: 1})
	}
	if err != nil {
		reason := notReady(err)
		s.metrics.storeErrors.WithLabelValues("ping").Inc()
		s.log.Warn("not ready: "+reason, "err", err)
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, api.ReadyResponse{Status: "unavailable", Reason: reason, RecallIndex: s.indexStatus(), FactExtraction: s.extractionStatus()})
		return
	}
	writeJSON(w, http.StatusOK, api.ReadyResponse{Status: "ready", RecallIndex: s.indexStatus(), FactExtraction: s.extractionStatus()})
}

// notReady says why a store's Ping failed, for /readyz, which needs no
// key: the class of the failure, never the store's own words.
func notReady(err error) string {
	switch {
	case errors.Is(err, store.ErrClosed):
		return "the server is shutting down"
	case errors.Is(err, agentmem.ErrExhausted):
		return "the store is out of disk space or memory: writes fail until it has room again"
	case transient(err):
		return "the store is unreachable or busy"
	}
	return "the store failed"
}

func (s *Server) indexStatus() *api.IndexStatus {
	if s.index == nil {
		return nil
	}
	st := s.index.Status()
	return &api.IndexStatus{Running: st.Running, LagSeconds: st.Lag.Seconds(), Applied: st.Applied, Errors: st.Errors}
}

func (s *Server) extractionStatus() *api.ViewStatus {
	if s.extract == nil {
		return nil
	}
	st := s.extract.Status()
	v := &api.ViewStatus{Running: st.Running, LagSeconds: st.Lag.Seconds(), Applied: st.Applied, Errors: st.Errors}
	if st.Lease != nil {
		v.Lease = &api.LeaseStatus{Held: st.Lease.Held, Holder: st.Lease.Holder}
	}
	return v
}
