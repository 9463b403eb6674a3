package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/agentmem/agentmem/llm"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/summarize"
	"github.com/agentmem/agentmem/tokenizer"
	"github.com/spf13/cobra"

	// The store backends, registered with store.Open by URL scheme.
	_ "github.com/agentmem/agentmem/store/memstore"
	_ "github.com/agentmem/agentmem/store/postgres"
	_ "github.com/agentmem/agentmem/store/sqlite"
)

func init() { register(newServeCmd) }

// serveFlags are the flags of agentmem serve.
type serveFlags struct {
	addr, store, tokenizer     string
	insecureNoAuth             bool
	maxBodyBytes               int64
	cacheSessions              int
	shutdownTimeout            time.Duration
	llmBaseURL, llmKey, llmMod string
}

func newServeCmd(a *app) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API",
		Long: `Serve starts the agentmem HTTP API: sessions, their logs of steps, the
context that fits a token budget, and compaction, as JSON under /v1
(the OpenAPI document is at /v1/openapi.json), with /healthz, /readyz and
/metrics (Prometheus).

With no flags it listens on 127.0.0.1:8080 and keeps its data in an
embedded SQLite file in the user's data directory
($XDG_DATA_HOME/agentmem/agentmem.db, or ~/.local/share/agentmem/agentmem.db),
created if missing. --store picks another backend by URL: sqlite:///path.db,
mem:// (nothing kept), postgres://... (many servers on one database).

API keys are not implemented yet, so the server refuses to listen on
anything but a loopback address unless --insecure-no-auth is given.

With AGENTMEM_LLM_BASE_URL (an OpenAI-compatible API), the compact route's
summarize strategy uses the model; the extractive summarizer is always
there. SIGINT or SIGTERM stops the server after the requests in flight.`,
		Example: `  agentmem serve
  agentmem serve --addr 127.0.0.1:9000 --store sqlite:///var/lib/agentmem/agentmem.db
  AGENTMEM_STORE=mem:// agentmem serve --log-level debug
  curl -s -XPOST localhost:8080/v1/sessions -H 'Content-Type: application/json' -d '{"user_id":"u1"}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), a, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8080", "listen on `HOST:PORT` (port 0 picks a free one)")
	fl.StringVar(&f.store, "store", "", storeFlagUsage)
	fl.BoolVar(&f.insecureNoAuth, "insecure-no-auth", false, "allow a non-loopback --addr although the API has no authentication yet")
	fl.StringVar(&f.tokenizer, "tokenizer", tokenizer.O200kBase, "the default token counter of the context route: o200k_base, cl100k_base or heuristic")
	fl.Int64Var(&f.maxBodyBytes, "max-body-bytes", server.DefaultMaxBodyBytes, "the largest request body, in `BYTES`")
	fl.IntVar(&f.cacheSessions, "cache-sessions", server.DefaultCacheSessions, "keep the rendered steps of up to `N` sessions in memory (0: the default, -1: none)")
	fl.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 15*time.Second, "how long to wait for requests in flight on SIGINT or SIGTERM")
	fl.StringVar(&f.llmBaseURL, "llm-base-url", "", "an OpenAI-compatible API `URL` for LLM summaries (e.g. http://localhost:11434/v1)")
	fl.StringVar(&f.llmKey, "llm-api-key", "", "the API key of --llm-base-url (prefer AGENTMEM_LLM_API_KEY: flags show in ps)")
	fl.StringVar(&f.llmMod, "llm-model", "", "the chat model of --llm-base-url")
	return cmd
}

func runServe(ctx context.Context, a *app, f serveFlags) error {
	if err := checkListenAddr(f.addr, f.insecureNoAuth); err != nil {
		return err
	}
	if f.shutdownTimeout <= 0 {
		return usagef("--shutdown-timeout must be positive")
	}
	storeURL, err := resolveStoreURL(a, f.store)
	if err != nil {
		return err
	}
	cfg := server.Config{Logger: a.log, MaxBodyBytes: f.maxBodyBytes, DefaultTokenizer: f.tokenizer, CacheSessions: f.cacheSessions}
	if f.llmBaseURL != "" {
		client, err := llm.New(llm.Config{BaseURL: f.llmBaseURL, APIKey: f.llmKey, Model: f.llmMod})
		if err != nil {
			return usagef("--llm-base-url: %v", err)
		}
		cfg.Summarizer = summarize.NewLLM(client, summarize.LLMOptions{})
	}
	st, err := store.Open(ctx, storeURL)
	if err != nil {
		return failure{err}
	}
	defer st.Close()
	cfg.Store = st
	srv, err := server.New(cfg)
	if err != nil {
		return usageError{err}
	}
	defer srv.Close()

	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return failure{err}
	}
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	a.log.Info("agentmem serving", "addr", ln.Addr().String(), "store", redactURL(storeURL), "llm_summarizer", cfg.Summarizer != nil)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return failure{err}
	case <-ctx.Done():
	}
	a.log.Info("shutting down: finishing the requests in flight", "timeout", f.shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
		return failure{fmt.Errorf("shutdown: %w (requests still in flight were cut off)", err)}
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return failure{err}
	}
	a.log.Info("stopped")
	return nil
}

// checkListenAddr refuses an address that is not on the loopback
// interface unless insecure is set: without API keys, anyone who can
// reach the port could read and write every session.
func checkListenAddr(addr string, insecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--addr %q: want HOST:PORT (%v)", addr, err)
	}
	if insecure || isLoopback(host) {
		return nil
	}
	where := host
	if where == "" {
		where = "every interface"
	}
	return usagef("--addr %q: refusing to listen on %s: the API has no authentication yet (API keys are the next release), "+
		"so anyone who can reach the port could read and change every session; listen on 127.0.0.1 or ::1, "+
		"or pass --insecure-no-auth if the network is yours alone", addr, where)
}

// isLoopback reports whether host is "localhost" or a loopback IP.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
