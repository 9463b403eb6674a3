package inspector

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
)

// ContentSecurityPolicy is the Content-Security-Policy header of every
// response. Only the inspector's own stylesheet and images may load, and
// no script at all. Forms submit only to the inspector, and no other site
// may frame it.
const ContentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self' data:; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// DefaultPageSize is the number of sessions a page of the sessions list
// shows when Config.PageSize is 0.
const DefaultPageSize = 50

// DefaultTimelinePage is the number of log entries the session page shows
// at once when Config.TimelinePage is 0.
const DefaultTimelinePage = 200

// MaxTimelineBytes bounds the text of the messages one page of a session's
// timeline shows. A page ends early, at the entry that reaches it, so it
// holds at least one. The next page goes on from there.
const MaxTimelineBytes = 4 << 20

// DefaultMaxContextTokens is Config.MaxContextTokens when it is 0: the
// largest context window of current models (GPT-4.1, Gemini), as the
// server's default.
const DefaultMaxContextTokens = sessions.DefaultMaxContextTokens

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Patterns are the http.ServeMux patterns of the inspector's pages and
// assets. A server with routes of its own may register the inspector
// under each of them, rather than at "/", so that other unknown paths stay
// its own 404s.
var Patterns = []string{
	"GET /{$}",
	"GET /sessions/{id}",
	"GET /sessions/{id}/context",
	"GET /facts",
	"GET /facts/history",
	"GET /recall",
	"GET /blocks",
	"GET /static/{name}",
}

// Config configures an Inspector. Only Store is required.
type Config struct {
	// Store holds the sessions. The inspector only reads it and does not
	// close it.
	Store *store.Store
	// Tenant returns the tenant a request may see. Every page shows that
	// tenant's data only. An error makes the page a 401 (its text is not
	// shown). Nil means the default tenant "" for every request.
	Tenant func(*http.Request) (string, error)
	// Facts, when set, backs the facts page; otherwise the page says
	// facts are not configured.
	Facts FactsSource
	// Recall, when set, backs the recall page; otherwise the page says
	// recall is not configured.
	Recall RecallSource
	// Blocks, when set, backs the memory blocks. A session's page lists the
	// blocks its contexts show, and the blocks page lists an owner's blocks
	// and each block's versions. Otherwise that page says blocks are not
	// configured. A *blocks.Memory is a BlocksSource.
	Blocks BlocksSource
	// DefaultTokenizer is the tokenizer of token counts when the page's
	// query names none; empty means o200k_base.
	DefaultTokenizer string
	// DefaultBudget is the budget of the "what the model saw" page when the
	// query names none. 0 means none, and the context is then fitted to
	// MaxContextTokens.
	DefaultBudget int
	// MaxContextTokens is the most tokens the "what the model saw" page
	// shows. Without a budget the context is fitted to it (the page says so
	// and marks the steps left out). A larger budget is refused with 400. It
	// is meant to be the server's own maximum, so that the page shows what
	// the API would answer. 0 means DefaultMaxContextTokens; at most
	// MaxBudget.
	MaxContextTokens int
	// Sessions, when set, is the sessions service the pages read sessions'
	// contexts through. It is shared with the other transports of the
	// process (the HTTP API, MCP), so that "what the model saw" is computed
	// as they serve it. It must be over Store. Nil: the inspector makes one
	// over Store.
	Sessions *sessions.Service
	// PageSize is the number of sessions per page of the sessions list;
	// 0 means DefaultPageSize.
	PageSize int
	// TimelinePage is the number of log entries per page of the session
	// page; 0 means DefaultTimelinePage.
	TimelinePage int
	// Clock returns the current time (the facts chart's "now"); nil means
	// time.Now.
	Clock func() time.Time
	// Logger receives the errors behind 500 pages; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Inspector serves the web inspector. It is an http.Handler meant to be
// mounted at "/"; create it with New. It is safe for concurrent use.
type Inspector struct {
	cfg   Config
	svc   *sessions.Service
	def   view
	mux   *http.ServeMux
	pages map[string]*template.Template
	log   *slog.Logger
}

// New returns an Inspector for cfg.
func New(cfg Config) (*Inspector, error) {
	if cfg.Store == nil {
		return nil, errors.New("inspector: Config.Store is required")
	}
	if cfg.DefaultTokenizer == "" {
		cfg.DefaultTokenizer = tokenizer.O200kBase
	}
	if _, err := tokenizer.Get(cfg.DefaultTokenizer); err != nil {
		return nil, fmt.Errorf("inspector: Config.DefaultTokenizer: %w", err)
	}
	if cfg.MaxContextTokens == 0 {
		cfg.MaxContextTokens = DefaultMaxContextTokens
	}
	if cfg.MaxContextTokens < 0 || cfg.MaxContextTokens > MaxBudget {
		return nil, fmt.Errorf("inspector: Config.MaxContextTokens %d is not from 1 to %d", cfg.MaxContextTokens, MaxBudget)
	}
	if cfg.DefaultBudget < 0 || cfg.DefaultBudget > cfg.MaxContextTokens {
		return nil, fmt.Errorf("inspector: Config.DefaultBudget %d is not from 0 to Config.MaxContextTokens (%d)", cfg.DefaultBudget, cfg.MaxContextTokens)
	}
	if cfg.PageSize == 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.PageSize < 0 || cfg.PageSize > store.MaxPageSize {
		return nil, fmt.Errorf("inspector: Config.PageSize %d is not from 1 to %d", cfg.PageSize, store.MaxPageSize)
	}
	if cfg.TimelinePage == 0 {
		cfg.TimelinePage = DefaultTimelinePage
	}
	if cfg.TimelinePage < 0 || cfg.TimelinePage > MaxTimelinePage {
		return nil, fmt.Errorf("inspector: Config.TimelinePage %d is not from 1 to %d", cfg.TimelinePage, MaxTimelinePage)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	pages, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	svc := cfg.Sessions
	if svc == nil {
		// The pages read contexts as of a point of the log
		// (Service.ContextAt), which the cache does not serve.
		if svc, err = sessions.New(sessions.Config{Store: cfg.Store, CacheBytes: -1, MaxContextTokens: cfg.MaxContextTokens, Logger: cfg.Logger}); err != nil {
			return nil, fmt.Errorf("inspector: %w", err)
		}
	}
	if svc.MaxContextTokens() < cfg.MaxContextTokens {
		return nil, fmt.Errorf("inspector: Config.MaxContextTokens %d is more than the sessions service's %d", cfg.MaxContextTokens, svc.MaxContextTokens())
	}
	in := &Inspector{
		cfg:   cfg,
		svc:   svc,
		def:   view{Format: render.NameOpenAI, Tokenizer: cfg.DefaultTokenizer, Budget: cfg.DefaultBudget},
		mux:   http.NewServeMux(),
		pages: pages,
		log:   cfg.Logger,
	}
	handlers := []http.HandlerFunc{in.sessions, in.session, in.context, in.facts, in.factHistory, in.recall, in.blocksPage, in.static}
	for i, p := range Patterns {
		in.mux.HandleFunc(p, handlers[i])
	}
	in.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		in.fail(w, r, notFound("no such page"))
	})
	return in, nil
}

// ServeHTTP implements http.Handler: it sets the security headers and
// serves the page.
func (in *Inspector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	in.mux.ServeHTTP(w, r)
}

// static serves an embedded asset, cacheable for an hour. Only the
// files of the static directory exist; any other name is the 404 page.
func (in *Inspector) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !fs.ValidPath(name) || strings.ContainsAny(name, `/\`) {
		in.fail(w, r, notFound("No such file."))
		return
	}
	data, err := staticFS.ReadFile("static/" + name)
	if err != nil {
		in.fail(w, r, notFound("No such file."))
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=3600")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}

// tenant returns the request's tenant, or writes the 401 page.
func (in *Inspector) tenant(w http.ResponseWriter, r *http.Request) (string, bool) {
	if in.cfg.Tenant == nil {
		return "", true
	}
	t, err := in.cfg.Tenant(r)
	if err != nil {
		in.fail(w, r, &pageError{Status: http.StatusUnauthorized, Message: "You are not allowed to see this inspector."})
		return "", false
	}
	return t, true
}

// page is what every template gets: the layout's fields and the page's
// own data.
type page struct {
	Title  string
	Nav    string // the active navigation entry
	Tenant string
	Data   any
}

// show renders a page with status 200.
func (in *Inspector) show(w http.ResponseWriter, r *http.Request, name string, p page) {
	in.write(w, r, http.StatusOK, name, p)
}

// write renders a page into a buffer first, so that a template error
// becomes a clean 500 rather than half a page.
func (in *Inspector) write(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	var buf bytes.Buffer
	if err := in.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		in.log.ErrorContext(r.Context(), "inspector: rendering a page", "page", name, "path", r.URL.Path, "err", err)
		if name != "error" {
			in.write(w, r, http.StatusInternalServerError, "error", page{Title: "Error", Data: &pageError{Status: 500, Message: "The page could not be rendered."}})
			return
		}
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// pageError is an error shown as a page: its status and a message for
// people.
type pageError struct {
	Status  int
	Message string
}

func (e *pageError) Error() string { return e.Message }

func notFound(msg string) *pageError {
	return &pageError{Status: http.StatusNotFound, Message: msg}
}

// fail shows err as an error page:
//
//   - a *pageError as it is;
//   - invalid input as 400 with its reason;
//   - a missing thing as 404;
//   - a canceled request as nothing, since the client is gone;
//   - a transient failure of the store (agentmem.ErrUnavailable, a
//     deadline) as 503 with Retry-After, as the API answers it;
//   - anything else as a logged 500 whose text is not shown.
func (in *Inspector) fail(w http.ResponseWriter, r *http.Request, err error) {
	pe := in.pageError(r, err)
	if pe == nil {
		return
	}
	if pe.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	in.write(w, r, pe.Status, "error", page{Title: http.StatusText(pe.Status), Data: pe})
}

func (in *Inspector) pageError(r *http.Request, err error) *pageError {
	var pe *pageError
	var ie *agentmem.InvalidError
	switch {
	case errors.As(err, &pe):
		return pe
	case errors.As(err, &ie):
		msg := ie.Reason
		if ie.Field != "" {
			msg = ie.Field + ": " + ie.Reason
		}
		return &pageError{Status: http.StatusBadRequest, Message: msg}
	case errors.Is(err, agentmem.ErrInvalid):
		return &pageError{Status: http.StatusBadRequest, Message: err.Error()}
	case errors.Is(err, agentmem.ErrNotFound):
		return notFound("Not found.")
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		return nil
	case errors.Is(err, agentmem.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		in.log.WarnContext(r.Context(), "inspector: the store is unavailable", "path", r.URL.Path, "err", err)
		return &pageError{Status: http.StatusServiceUnavailable, Message: "The store is unavailable right now (busy, unreachable or restarting); try again in a moment."}
	}
	in.log.ErrorContext(r.Context(), "inspector: serving a page", "path", r.URL.Path, "err", err)
	return &pageError{Status: http.StatusInternalServerError, Message: "Something went wrong on the server; the error is in its log."}
}
