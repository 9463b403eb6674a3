package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/inspector"
	agentmcp "github.com/agentmem/agentmem/mcp"
	"github.com/agentmem/agentmem/proxy"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
	"github.com/spf13/cobra"

	// The store backends, registered with store.Open by URL scheme.
	_ "github.com/agentmem/agentmem/store/memstore"
	_ "github.com/agentmem/agentmem/store/postgres"
	sqlitestore "github.com/agentmem/agentmem/store/sqlite"

	// The key store backends, registered with auth.Open by URL scheme:
	// the keys live in the same database as the sessions.
	_ "github.com/agentmem/agentmem/auth/postgres"
	_ "github.com/agentmem/agentmem/auth/sqlite"
	"github.com/agentmem/agentmem/internal/cli"
)

func init() { cli.Register(newServeCmd) }

// serveFlags are the flags of agentmem serve.
type serveFlags struct {
	addr, store, tokenizer string
	requireKeys            bool
	tlsCert, tlsKey        string
	corsOrigins            []string
	maxBodyBytes           int64
	cacheBytes             byteSize
	maxContextTokens       int
	shutdownTimeout        time.Duration
	pruneInterval          time.Duration
	model                  modelFlags
	embed                  embedFlags
	// The proxy routes' upstreams and context windows.
	upstreamURL, upstreamKey   string
	anthropicURL, anthropicKey string
	contextWindows             map[string]int
	defaultContextWindow       int
	maxReplyBytes              byteSize
}

func newServeCmd(a *cli.App) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API",
		Long: `Serve starts the agentmem memory server:
  - the HTTP JSON API under /v1: sessions, their logs of steps, the context
    that fits a token budget, compaction, recall search over every turn of
    every session (/v1/recall) and per-user facts (/v1/users/{user}/facts);
    the OpenAPI document is at /v1/openapi.json;
  - the MCP tools at /mcp (streamable HTTP; 'agentmem mcp' serves them over
    stdio);
  - the web inspector at / (sessions, what the model saw at each call,
    facts, recall);
  - /healthz, /readyz and /metrics (Prometheus).

With no flags it listens on 127.0.0.1:8080 and keeps its data in an
embedded SQLite file in the user's data directory
($XDG_DATA_HOME/agentmem/agentmem.db, or ~/.local/share/agentmem/agentmem.db),
created if missing. --store picks another backend by URL: sqlite:///path.db,
mem:// (nothing kept), postgres://... (many servers on one database).

Security. Requests carry an API key as "Authorization: Bearer <key>";
create keys with 'agentmem keys create --tenant T' (same --store). Each key
reaches only its tenant's sessions: another tenant's session is answered
404, as a missing one. Keys are required:
  - always when --addr is not a loopback address (the server then refuses
    to start until the store has an active key);
  - with --require-keys;
  - as soon as the store holds any key, revoked ones included (a server
    already running notices within 2 seconds): creating a key turns
    enforcement on, revoking one never turns it off.
Otherwise (the quickstart: loopback, no key ever created) requests to
localhost without a key work, as the default tenant. /healthz, /readyz,
/metrics and /v1/openapi.json never need a key.

--tls-cert and --tls-key (PEM files) serve HTTPS. Without them keys cross
the network in clear text: on a non-loopback address, use them or a TLS
proxy. --cors-origins lists the browser origins (exact scheme://host[:port],
no wildcard) whose pages may call the API; CORS is off without it, and
cross-origin writes from other origins are refused (403).

Memory with no code change: with --upstream-base-url (an OpenAI-compatible
API, such as https://api.openai.com/v1) POST /v1/chat/completions, and with
--anthropic-base-url (https://api.anthropic.com) POST /v1/messages, proxy
the provider's API: point a client's base URL at this server and name a
session in the X-Agentmem-Session header; agentmem records the
conversation and sends the model a context fitted to a token budget (see
docs/proxy.md). --upstream-api-key and --anthropic-api-key (better given
as AGENTMEM_UPSTREAM_API_KEY and AGENTMEM_ANTHROPIC_API_KEY) win over the
caller's own credentials, which are forwarded otherwise.

With AGENTMEM_LLM_BASE_URL (an OpenAI-compatible API), the compact route's
summarize strategy uses the model (the extractive summarizer is always
there), and so does fact extraction: POST /v1/users/{user}/facts/extract
and the turns of sessions with a user, learnt in the background from the
store's log: those of every such session with --extract-facts (but the
sessions created with "extract_facts": false), those of the sessions
created with "extract_facts": true without it. SIGINT or SIGTERM stops the server after the requests in flight.`,
		Example: `  agentmem serve
  agentmem serve --addr 127.0.0.1:9000 --store sqlite:///var/lib/agentmem/agentmem.db
  AGENTMEM_STORE=mem:// agentmem serve --log-level debug
  agentmem serve --addr 0.0.0.0:8443 --tls-cert cert.pem --tls-key key.pem --cors-origins https://app.example.com
  curl -s -XPOST localhost:8080/v1/sessions -H 'Content-Type: application/json' -d '{"user_id":"u1"}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), a, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8080", "listen on `HOST:PORT` (port 0 picks a free one)")
	fl.StringVar(&f.store, "store", "", storeFlagUsage)
	fl.BoolVar(&f.requireKeys, "require-keys", false, "require an API key on every request, even on loopback before any key exists")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with this certificate (PEM `FILE`, chain included); needs --tls-key")
	fl.StringVar(&f.tlsKey, "tls-key", "", "the private key (PEM `FILE`) of --tls-cert")
	fl.StringSliceVar(&f.corsOrigins, "cors-origins", nil, "browser `ORIGINS` (comma-separated scheme://host[:port]) allowed to call the API; CORS is off without it")
	fl.StringVar(&f.tokenizer, "tokenizer", tokenizer.O200kBase, "the default token counter of the context route: o200k_base, cl100k_base or heuristic")
	fl.Int64Var(&f.maxBodyBytes, "max-body-bytes", server.DefaultMaxBodyBytes, "the largest request body, in `BYTES`")
	f.cacheBytes = byteSize(defaultCacheBytes(memoryLimit("/")))
	fl.Var(&f.cacheBytes, "cache-bytes", "bound the sessions' steps and renderings the context route keeps in memory to `SIZE` (e.g. 64MiB, 1GiB; -1: keep none), least recently used out, a session larger than it served without being kept; "+
		"the default is a quarter of the memory the process may use (its cgroup's limit or the machine's), from 256MiB to 1GiB: 1GiB holds about 110 sessions of 1,000 realistic agent steps read in one format")
	fl.IntVar(&f.maxContextTokens, "max-context-tokens", server.DefaultMaxContextTokens, "the most `TOKENS` a context holds: a context request without a budget, and the inspector's context page, are fitted to it; a larger budget is refused (400). "+
		"The default is the largest context window of current models")
	fl.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 15*time.Second, "how long to wait for requests in flight on SIGINT or SIGTERM")
	fl.DurationVar(&f.pruneInterval, "prune-interval", defaultPruneInterval, "apply retention (delete expired sessions) this often; 0 turns it off")
	addModelFlags(fl, &f.model)
	fl.StringVar(&f.upstreamURL, "upstream-base-url", "", "proxy POST /v1/chat/completions to this OpenAI-compatible API `URL` (e.g. https://api.openai.com/v1)")
	fl.StringVar(&f.upstreamKey, "upstream-api-key", "", "the API key sent to --upstream-base-url instead of the caller's (prefer AGENTMEM_UPSTREAM_API_KEY: flags show in ps)")
	fl.StringVar(&f.anthropicURL, "anthropic-base-url", "", "proxy POST /v1/messages to this Anthropic API `URL` (e.g. https://api.anthropic.com)")
	fl.StringVar(&f.anthropicKey, "anthropic-api-key", "", "the API key sent to --anthropic-base-url instead of the caller's (prefer AGENTMEM_ANTHROPIC_API_KEY)")
	fl.StringToIntVar(&f.contextWindows, "proxy-context-windows", nil, "the proxy's context windows of models, by name prefix (`PREFIX=TOKENS,...`), on top of the built-in ones (gpt-4o=128000, claude=200000, ...)")
	fl.IntVar(&f.defaultContextWindow, "proxy-default-context-window", proxy.DefaultContextWindow, "the proxy's context window of a model it does not know, in `TOKENS`")
	f.maxReplyBytes = proxy.DefaultMaxReplyBytes
	fl.Var(&f.maxReplyBytes, "proxy-max-reply-bytes", "the most of one provider answer the proxy holds to record its reply (`SIZE`, e.g. 1MiB): a larger reply reaches the client whole and is recorded cut short, marked proxy.reply_truncated")
	addEmbedFlags(fl, &f.embed)
	return cmd
}

func runServe(ctx context.Context, a *cli.App, f serveFlags) error {
	loopback, err := listenIsLoopback(f.addr)
	if err != nil {
		return err
	}
	if f.shutdownTimeout <= 0 {
		return cli.Usagef("--shutdown-timeout must be positive")
	}
	if f.pruneInterval < 0 {
		return cli.Usagef("--prune-interval must not be negative")
	}
	if f.maxContextTokens < 1 || f.maxContextTokens > server.MaxBudget {
		return cli.Usagef("--max-context-tokens must be from 1 to %d", server.MaxBudget)
	}
	tlsCfg, err := loadTLS(f.tlsCert, f.tlsKey)
	if err != nil {
		return err
	}
	storeURL, err := resolveStoreURL(a, f.store)
	if err != nil {
		return err
	}
	cfg := server.Config{Logger: a.Log, MaxBodyBytes: f.maxBodyBytes, DefaultTokenizer: f.tokenizer, CacheBytes: int64(f.cacheBytes), MaxContextTokens: f.maxContextTokens, CORSOrigins: f.corsOrigins}
	// The model writes summaries and learns facts from turns (POST
	// /v1/users/{user}/facts/extract, --extract-facts).
	if cfg.Summarizer, cfg.Extractor, err = f.model.open(); err != nil {
		return err
	}
	st, err := store.Open(ctx, storeURL)
	if err != nil {
		return cli.Failure(err)
	}
	defer st.Close()
	warnAsyncCommits(ctx, a.Log, st)
	// Every step written to the store is indexed for recall, in the
	// background, from the store's log.
	follower, mems, done, err := openIndexed(ctx, a, storeURL, st, f.embed)
	if err != nil {
		return err
	}
	defer done()
	cfg.Store, cfg.Recall, cfg.RecallFollower, cfg.Facts, cfg.Blocks = st, mems.recall, follower, mems.facts, mems.blocks
	counter, err := tokenizer.Get(f.tokenizer)
	if err != nil {
		return cli.Usagef("--tokenizer %q: %v", f.tokenizer, err)
	}
	// One sessions service for the API, MCP and the inspector: they serve
	// sessions alike, from one context cache.
	svc, err := sessions.New(sessions.Config{Store: st, Counter: counter, CacheBytes: int64(f.cacheBytes),
		MaxContextTokens: f.maxContextTokens, Summarizer: cfg.Summarizer, Logger: a.Log, Facts: mems.facts, Recall: mems.recall, Blocks: mems.blocks,
		Extraction: cfg.Extractor != nil && mems.facts != nil, ExtractByDefault: f.model.extractFacts && mems.facts != nil})
	if err != nil {
		return cli.UsageError(err)
	}
	defer svc.DropCache()
	defer svc.NotifyWrites(follower.Notify)()
	cfg.Sessions = svc
	// The views of the log: automatic compaction, the blocks of deleted
	// sessions and, with a model, the facts of the turns of the sessions
	// with a user that opt in (all, with --extract-facts, but those that
	// opt out).
	learner, stopViews, err := startViews(a, svc, st, mems.facts, cfg.Extractor)
	if err != nil {
		return cli.UsageError(err)
	}
	defer stopViews()
	cfg.FactExtraction = learner
	msrv, err := agentmcp.New(agentmcp.Config{
		Store: st, Facts: mems.facts, Extractor: cfg.Extractor, Recall: mems.recall, RecallFollower: follower, Blocks: mems.blocks,
		Logger: a.Log, Version: buildVersion(), Sessions: svc,
	})
	if err != nil {
		return cli.UsageError(err)
	}
	cfg.MCP = agentmcp.NewHTTPHandler(msrv, func(r *http.Request) (string, error) { return server.Tenant(r), nil })
	insp, err := inspector.New(inspector.Config{
		Store: st, Tenant: func(r *http.Request) (string, error) { return server.Tenant(r), nil },
		Facts: inspector.FactsFrom(mems.facts), Recall: inspector.RecallFrom(mems.recall), Blocks: mems.blocks,
		DefaultTokenizer: f.tokenizer, MaxContextTokens: f.maxContextTokens, Logger: a.Log, Sessions: svc,
	})
	if err != nil {
		return cli.UsageError(err)
	}
	cfg.Inspector, cfg.InspectorPatterns = insp, inspector.Patterns
	ks, err := auth.Open(ctx, storeURL)
	if err != nil {
		return cli.Failure(fmt.Errorf("opening the API keys: %w", err))
	}
	defer ks.Close()
	keys := auth.NewKeys(ks, auth.KeysOptions{})
	require := f.requireKeys || !loopback
	if !loopback {
		if err := checkActiveKeys(ctx, keys, f.addr, storeURL); err != nil {
			return err
		}
	}
	cfg.Auth = auth.NewAuthenticator(keys, auth.AuthenticatorOptions{Require: require})
	if cfg.Proxy, err = proxy.New(proxy.Config{Sessions: svc, Logger: a.Log,
		OpenAI:         proxy.Upstream{BaseURL: f.upstreamURL, APIKey: f.upstreamKey},
		Anthropic:      proxy.Upstream{BaseURL: f.anthropicURL, APIKey: f.anthropicKey},
		ContextWindows: f.contextWindows, DefaultContextWindow: f.defaultContextWindow, MaxReplyBytes: int64(f.maxReplyBytes),
	}); err != nil {
		return cli.UsageError(err)
	}
	srv, err := server.New(cfg)
	if err != nil {
		return cli.UsageError(err)
	}
	defer srv.Close()

	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return cli.Failure(err)
	}
	hs := &http.Server{
		Handler:           srv,
		TLSConfig:         tlsCfg,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(a.Log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	keysRule := "required"
	if !require {
		keysRule = "required once any key exists"
	}
	// Where everything is, before the line that says the server is up.
	a.Log.Info("endpoints", endpoints(ln.Addr(), tlsCfg != nil, f.upstreamURL != "", f.anthropicURL != "", storeURL)...)
	a.Log.Info("agentmem serving", "addr", ln.Addr().String(), "tls", tlsCfg != nil, "api_keys", keysRule,
		"cors_origins", strings.Join(f.corsOrigins, ","), "store", redactURL(storeURL), "llm_summarizer", cfg.Summarizer != nil, "extract_facts", f.model.extractFacts,
		"openai_upstream", redactURL(f.upstreamURL), "anthropic_upstream", redactURL(f.anthropicURL))
	if !loopback && tlsCfg == nil {
		a.Log.Warn("serving plain HTTP on a non-loopback address: API keys cross the network in clear text; " +
			"give --tls-cert and --tls-key, or put a TLS-terminating proxy in front")
	}
	served := make(chan error, 1)
	go func() {
		if tlsCfg != nil {
			served <- hs.ServeTLS(ln, "", "")
			return
		}
		served <- hs.Serve(ln)
	}()
	if f.pruneInterval > 0 {
		rctx, stop := context.WithCancel(ctx)
		defer stop()
		go runRetention(rctx, st, f.pruneInterval, a.Log) // the recall view forgets the expired sessions' documents
	}
	select {
	case err := <-served:
		return cli.Failure(err)
	case <-ctx.Done():
	}
	a.Log.Info("shutting down: finishing the requests in flight", "timeout", f.shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
		return cli.Failure(fmt.Errorf("shutdown: %w (requests still in flight were cut off)", err))
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return cli.Failure(err)
	}
	a.Log.Info("stopped")
	return nil
}

// listenIsLoopback reports whether --addr is on a loopback interface
// ("localhost" or a loopback IP); an empty host (every interface) is not.
func listenIsLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, cli.Usagef("--addr %q: want HOST:PORT (%v)", addr, err)
	}
	return isLoopback(host), nil
}

// checkActiveKeys refuses to serve on a non-loopback address while the
// store has no active key: every request would be refused, and the way
// out (create a key) is better said now than by 401s.
func checkActiveKeys(ctx context.Context, keys *auth.Keys, addr, storeURL string) error {
	list, err := keys.List(ctx, "")
	if err != nil {
		return cli.Failure(fmt.Errorf("reading the API keys: %w", err))
	}
	for _, k := range list {
		if !k.Revoked() {
			return nil
		}
	}
	if u, err := url.Parse(storeURL); err == nil && u.Scheme == "mem" {
		return cli.Usagef("--addr %q is not a loopback address, so every request needs an API key, and a mem:// store "+
			"keeps no keys: use a sqlite:// or postgres:// store and create a key with 'agentmem keys create'", addr)
	}
	return cli.Usagef("--addr %q is not a loopback address, so every request needs an API key, and the store has no active key: "+
		"create one first with 'agentmem keys create --tenant T --store %s'", addr, redactURL(storeURL))
}

// loadTLS loads the certificate and key of --tls-cert and --tls-key, or
// returns nil when neither is given.
func loadTLS(certFile, keyFile string) (*tls.Config, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil
	}
	if certFile == "" || keyFile == "" {
		return nil, cli.Usagef("--tls-cert and --tls-key go together: give both, or neither")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, cli.Usagef("--tls-cert/--tls-key: %v", err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}, nil
}

// isLoopback reports whether host is "localhost" or a loopback IP.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// warnAsyncCommits logs a warning when the store's database acknowledges
// commits before they are durable (postgres.Store.AsyncCommits): a crash,
// or on Citus a shard move, can then lose acknowledged appends.
// endpoints are the attributes of the start-up line that says where
// everything is: the URLs of the API, the inspector, MCP and the proxy
// routes that are on, and where the data lives. A wildcard address is
// shown as localhost, the one name that reaches it from this machine.
func endpoints(addr net.Addr, tls, openAI, anthropic bool, storeURL string) []any {
	host := addr.String()
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		host = net.JoinHostPort("localhost", strconv.Itoa(ta.Port))
	}
	base := "http://" + host
	if tls {
		base = "https://" + host
	}
	attrs := []any{"api", base + "/v1", "inspector", base + "/", "mcp", base + server.MCPPath}
	if openAI {
		attrs = append(attrs, "openai_proxy", base+"/v1/chat/completions")
	}
	if anthropic {
		attrs = append(attrs, "anthropic_proxy", base+"/v1/messages")
	}
	data := redactURL(storeURL)
	const inMemory = "memory (lost when the server stops)"
	if u, err := url.Parse(storeURL); err == nil && u.Scheme == "mem" {
		data = inMemory
	} else if err == nil && u.Scheme == sqlitestore.Scheme {
		if path, _, err := sqlitestore.ParseURL(u); err == nil {
			data = inMemory
			if path != sqlitestore.MemoryPath {
				data, _ = filepath.Abs(path)
			}
		}
	}
	return append(attrs, "data", data)
}

func warnAsyncCommits(ctx context.Context, log *slog.Logger, st *store.Store) {
	var c interface {
		AsyncCommits(context.Context) ([]string, error)
	}
	if !st.As(&c) {
		return
	}
	servers, err := c.AsyncCommits(ctx)
	switch {
	case err != nil:
		log.Warn("could not read the database's synchronous_commit", "err", err)
	case len(servers) > 0:
		log.Warn("the database acknowledges commits before they are durable (synchronous_commit = off): "+
			"a crash can lose acknowledged appends, and so can a Citus shard move; set synchronous_commit on "+
			"(docs/operations.md, Storage: Durability)", "servers", strings.Join(servers, ","))
	}
}
