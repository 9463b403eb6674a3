package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
	"github.com/agentmem/agentmem/views/recallview"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerName is the implementation name the server announces to clients.
const ServerName = "agentmem"

// maxTenantServers bounds the per-tenant SDK servers an HTTP handler keeps
// (see Server.forTenant); past it the cache starts over.
const maxTenantServers = 1024

// Config configures a Server. Store is required; the rest is optional.
type Config struct {
	// Store holds the sessions the session tools read and write.
	Store *store.Store
	// Facts, when set, is the user-facts memory of the remember,
	// recall_facts and forget tools; nil leaves those tools out.
	Facts *facts.Memory
	// Extractor, when set with Facts, is the model of the extract_facts
	// tool, which learns facts from a turn (facts.LLMExtractor); nil
	// leaves that tool out.
	Extractor facts.Extractor
	// Recall, when set, is the recall index search_memory searches; nil
	// leaves that tool out.
	Recall *recall.Index
	// RecallFollower, when set, is the view that indexes Store's log into
	// Recall (recallview.Start): search_memory waits for it, briefly, so
	// that an agent finds what it has just appended. The writes of a
	// sessions service the server makes wake it; those of a Sessions
	// given must (sessions.Service.NotifyWrites).
	RecallFollower *recallview.Follower
	// Blocks, when set, are the memory blocks of the memory_list,
	// memory_append, memory_replace and memory_rethink tools, and those
	// get_context shows. A Sessions given must have them as its
	// Config.Blocks. Nil leaves those tools out.
	Blocks *blocks.Memory
	// Tenant is the tenant every tool acts for when the server runs on a
	// transport of its own (Run, SDK: stdio, in-memory). Over HTTP the
	// tenant comes from each request instead (see NewHTTPHandler). ""
	// is the default tenant.
	Tenant string
	// Counter is get_context's token counter when the call names none;
	// nil means o200k_base.
	Counter tokenizer.Counter
	// Logger receives diagnostics (failures of the store, of facts or of
	// recall, with details the tool result leaves out); nil discards them.
	// Over stdio it must not write to stdout, which carries the protocol.
	Logger *slog.Logger
	// Clock returns the current time, for step times; nil means time.Now.
	Clock func() time.Time
	// NewID returns new step IDs; nil means agentmem.NewID.
	NewID func() string
	// Version is the server version announced to clients; "" means "dev".
	Version string
	// MaxContextTokens is the largest context get_context renders: its
	// largest budget, and what a call without a budget is fitted to. 0
	// means DefaultMaxContextTokens; more than MaxBudget is MaxBudget.
	MaxContextTokens int
	// DefaultContextBudget is get_context's budget when a call gives none
	// (or 0), so that a long session is not read whole into a model's
	// context. 0 means DefaultContextBudget, and more than MaxContextTokens
	// is MaxContextTokens. A call that gives none but whose pinned steps
	// need more gets what they need.
	DefaultContextBudget int
	// Sessions, when set, is the sessions service the session tools call. It
	// is shared with the other transports of the process (the HTTP API, the
	// inspector), so that they serve sessions alike from one context cache.
	// It must be over Store, and Counter and MaxContextTokens are then its
	// own. Nil: the server makes one over Store, with a context cache of
	// sessions.DefaultCacheBytes.
	Sessions *sessions.Service
}

// Server is agentmem's MCP server: the tools of package doc over the
// library's stores. It is safe for concurrent use, and one Server serves
// any number of connections and tenants.
type Server struct {
	cfg Config

	mu        sync.Mutex
	byTenant  map[string]*sdk.Server
	defaultSv *sdk.Server
}

// New checks cfg and builds a Server. The Server does not own the store:
// the caller closes it.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, &agentmem.InvalidError{Field: "Store", Reason: "is required"}
	}
	if cfg.Counter == nil {
		cfg.Counter = tokenizer.Default()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.MaxContextTokens <= 0 {
		cfg.MaxContextTokens = DefaultMaxContextTokens
	}
	cfg.MaxContextTokens = min(cfg.MaxContextTokens, MaxBudget)
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = agentmem.NewID
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Sessions == nil {
		svc, err := sessions.New(sessions.Config{Store: cfg.Store, Counter: cfg.Counter, Clock: cfg.Clock,
			MaxContextTokens: cfg.MaxContextTokens, Logger: cfg.Logger, Facts: cfg.Facts, Recall: cfg.Recall, Blocks: cfg.Blocks})
		if err != nil {
			return nil, fmt.Errorf("mcp: %w", err)
		}
		if cfg.RecallFollower != nil {
			svc.NotifyWrites(cfg.RecallFollower.Notify)
		}
		cfg.Sessions = svc
	}
	cfg.Counter, cfg.MaxContextTokens = cfg.Sessions.Counter(), cfg.Sessions.MaxContextTokens()
	if cfg.DefaultContextBudget <= 0 {
		cfg.DefaultContextBudget = DefaultContextBudget
	}
	cfg.DefaultContextBudget = min(cfg.DefaultContextBudget, cfg.MaxContextTokens)
	s := &Server{cfg: cfg, byTenant: map[string]*sdk.Server{}}
	sv, err := s.build(cfg.Tenant)
	if err != nil {
		return nil, err
	}
	s.defaultSv = sv
	return s, nil
}

// SDK returns the SDK server whose tools act for Config.Tenant, to connect
// to any transport of the MCP Go SDK (sdk.Server.Connect).
func (s *Server) SDK() *sdk.Server { return s.defaultSv }

// Run serves one client over t (for example &sdk.StdioTransport{}) as
// Config.Tenant, until the client disconnects or ctx is cancelled.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	err := s.defaultSv.Run(ctx, t)
	if ctx.Err() != nil && (err == nil || errors.Is(err, ctx.Err())) {
		return nil
	}
	return err
}

// forTenant returns the SDK server whose tools act for tenant, building
// and caching it on first use.
func (s *Server) forTenant(tenant string) (*sdk.Server, error) {
	if tenant == s.cfg.Tenant {
		return s.defaultSv, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sv, ok := s.byTenant[tenant]; ok {
		return sv, nil
	}
	sv, err := s.build(tenant)
	if err != nil {
		return nil, err
	}
	if len(s.byTenant) >= maxTenantServers {
		clear(s.byTenant)
	}
	s.byTenant[tenant] = sv
	return sv, nil
}

// build makes an SDK server with every tool bound to tenant.
func (s *Server) build(tenant string) (*sdk.Server, error) {
	sv := sdk.NewServer(&sdk.Implementation{Name: ServerName, Title: "agentmem memory", Version: s.cfg.Version},
		&sdk.ServerOptions{Instructions: instructions(&s.cfg), Capabilities: &sdk.ServerCapabilities{}})
	t := &tools{cfg: &s.cfg, tenant: tenant}
	if err := t.register(sv); err != nil {
		return nil, err
	}
	return sv, nil
}

// instructions returns what is sent to clients at initialization, which
// assistants usually show the model: what the configured tools are for.
func instructions(cfg *Config) string {
	s := sessionInstructions
	if cfg.Facts != nil {
		s += " " + factsInstructions
		if cfg.Extractor != nil {
			s += " " + extractInstructions
		}
	}
	if cfg.Recall != nil {
		s += " " + recallInstructions
	}
	if cfg.Blocks != nil {
		s += " " + blocksInstructions
	}
	return s
}

// The parts of the instructions, one per group of tools.
const (
	sessionInstructions = `agentmem is a memory for LLM agents. Sessions hold a conversation's messages as a durable log: create_session starts one, append adds messages (tool calls with their results), get_context returns the messages that fit a token budget in a chosen API format and says what was left out, list_sessions finds sessions.`
	factsInstructions   = `Long-term facts about users outlive sessions: remember records a durable fact a user stated (saying it again reinforces it), recall_facts returns a user's most relevant facts with their confidence now (facts not seen again fade), forget deletes a wrong or unwanted fact for good.`
	extractInstructions = `extract_facts has the server's model learn them from a turn instead: it adds, reinforces and supersedes facts as the turn shows.`
	blocksInstructions  = `Memory blocks are labelled sections that every context of a session shows after its system prompt (the session's and its user's): memory_list shows them, and memory_append, memory_replace and memory_rethink edit them, within each block's limit in characters.`
	recallInstructions  = `search_memory searches the turns of past sessions (of one session, user or agent, or all) and returns each match with its session, step and, on request, the turns around it.`
)
