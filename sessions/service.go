package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/internal/turns"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
)

// Defaults of Config.
const (
	// DefaultCacheBytes bounds the context cache when Config.CacheBytes
	// is 0: 256 MiB of session memories.
	DefaultCacheBytes = 256 << 20
	// DefaultMaxContextTokens is the largest context served when
	// Config.MaxContextTokens is 0: a context request without a budget
	// is fitted to it, and a larger budget is refused.
	DefaultMaxContextTokens = 1_000_000
)

// Config configures a Service.
type Config struct {
	// Store holds the sessions. Required.
	Store *store.Store
	// Counter counts tokens when a request names no tokenizer; nil means
	// tokenizer.Default().
	Counter tokenizer.Counter
	// Clock gives the time of new steps; nil means time.Now.
	Clock func() time.Time
	// CacheBytes bounds the context cache (see the cache's accounting);
	// 0 means DefaultCacheBytes, and a negative value keeps no cache
	// (every context request reads the session's working set).
	CacheBytes int64
	// MaxContextTokens is the largest context served; 0 means
	// DefaultMaxContextTokens.
	MaxContextTokens int
	// Summarizer is the LLM summarizer of the summarize strategy
	// (SummarizerLLM); nil: only the extractive one is available.
	Summarizer agentmem.Summarizer
	// Facts and Recall serve the facts and recalled turns a context
	// request may ask for (ContextRequest.Facts and Recall); nil: such a
	// request is an *agentmem.InvalidError.
	Facts  Facts
	Recall Recall
	// Blocks, when set, holds the memory blocks every context of a
	// session shows after its system prompt, pinned: the session's and
	// its user's (Context). Nil: contexts show none.
	Blocks Blocks
	// Extraction says that facts are learnt, in the background, from the
	// turns of the sessions with a user that Extracts selects (a
	// factextract.Learner with Extracts as its Config.Select follows the
	// store). Without it, creating a session that opts in
	// (store.CreateRequest.ExtractFacts true) is an
	// *agentmem.InvalidError: nothing would extract its facts.
	Extraction bool
	// ExtractByDefault says whether the turns of a session that does not
	// say (ExtractFacts nil) are learnt from: the server's default
	// (serve --extract-facts). It needs Extraction.
	ExtractByDefault bool
	// Logger logs what the service recovers from; nil discards it.
	Logger *slog.Logger
	// Retry bounds the retries of the writes that do not depend on the
	// log's position (see Service.Retry); nil means store.DefaultRetry.
	// Its OnLost, if any, is told of lost races besides the observers.
	Retry *store.RetryPolicy
}

// Observer watches a Service's context cache, for metrics (see
// Service.Observe).
type Observer interface {
	// CacheEvent reports one event: "hit", "miss" (a first load), "append",
	// "catchup", "reload", "evict" or "too_large". On "append", steps and
	// amendments appended through the service were put in the cached
	// replica as they were written. On "catchup", entries appended since by
	// another writer were read from the log and applied. On "reload", the
	// replica was rebuilt after a compaction. "too_large" is a session
	// larger than the whole cache, not kept.
	CacheEvent(event string)
	// CacheSize reports the bytes the cache accounts for and the number
	// of sessions it holds, after each change.
	CacheSize(bytes int64, sessions int)
}

// RetryObserver is an Observer that is told of the writes that lost a
// race with other writers of a session too (see Service.Retry), for
// metrics.
type RetryObserver interface {
	Observer
	// WriteRetry reports a try of a write (op: "append", "messages",
	// "items", "pop", "clear", "compact", "auto_compact", "record") that
	// another writer got ahead of: retried says whether it was tried
	// again, or gave up (store.ErrContended).
	WriteRetry(op string, retried bool)
}

// Service is the one implementation of what can be done to a session from
// outside the process. The HTTP API (package server), the MCP server
// (package mcp) and the web inspector (package inspector) all call it. So a
// session is created, appended to, read, fitted to a budget and compacted
// the same way whatever the transport.
//
// Every method names the session's tenant: session IDs are per tenant
// (see store.Store), and another tenant's session is not found, as a
// missing one is. Errors are the store's (wrapping agentmem.ErrNotFound,
// ErrConflict, ErrInvalid, ErrUnavailable), *agentmem.BudgetError, and
// *SummarizerError; the transports map them to their own answers.
//
// A Service is safe for concurrent use. Several services (in several
// processes) may share a store: the context cache catches up with the
// log before every use, so it never serves a stale context.
type Service struct {
	cfg     Config
	st      *store.Store
	counter tokenizer.Counter
	clock   func() time.Time
	log     *slog.Logger
	cache   *cache
	// observers are told of the cache's events (Observe).
	observers atomic.Pointer[[]Observer]
	// notify are the functions told of the service's appends
	// (NotifyWrites), such as the automatic compaction's.
	notify atomic.Pointer[[]*func()]
	// retry is Config.Retry, with the observers told of lost races.
	retry *store.RetryPolicy
	// turns are the sessions' turns of the writes that read before they
	// write (retryIn). One that read the session appends before the next
	// reads it, so they never get ahead of one another. They retry only
	// when a writer that takes no turn got in between: a plain append, a
	// compaction waiting for an LLM, another process. Without turns
	// the results of one action sent at once lose most of their tries to
	// each other.
	turns turns.Turns[store.Key]
}

// New returns a service over cfg.Store.
func New(cfg Config) (*Service, error) {
	// A nil *facts.Memory or *recall.Index in the interface is none.
	if f, ok := cfg.Facts.(*facts.Memory); ok && f == nil {
		cfg.Facts = nil
	}
	if r, ok := cfg.Recall.(*recall.Index); ok && r == nil {
		cfg.Recall = nil
	}
	if b, ok := cfg.Blocks.(*blocks.Memory); ok && b == nil {
		cfg.Blocks = nil
	}
	if cfg.Store == nil {
		return nil, fmt.Errorf("sessions: Config.Store is required: %w", agentmem.ErrInvalid)
	}
	if cfg.Counter == nil {
		cfg.Counter = tokenizer.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.MaxContextTokens == 0 {
		cfg.MaxContextTokens = DefaultMaxContextTokens
	}
	if cfg.ExtractByDefault && !cfg.Extraction {
		return nil, fmt.Errorf("sessions: Config.ExtractByDefault needs Config.Extraction: %w", agentmem.ErrInvalid)
	}
	if cfg.MaxContextTokens < 0 {
		return nil, fmt.Errorf("sessions: Config.MaxContextTokens is negative: %w", agentmem.ErrInvalid)
	}
	switch {
	case cfg.CacheBytes == 0:
		cfg.CacheBytes = DefaultCacheBytes
	case cfg.CacheBytes < 0:
		cfg.CacheBytes = 0
	}
	s := &Service{cfg: cfg, st: cfg.Store, counter: cfg.Counter, clock: cfg.Clock, log: cfg.Logger}
	s.cache = newCache(s, cfg.CacheBytes)
	retry := store.DefaultRetry
	if cfg.Retry != nil {
		retry = *cfg.Retry
	}
	own := retry.OnLost
	retry.OnLost = func(op string, attempt int, retried bool) {
		if own != nil {
			own(op, attempt, retried)
		}
		if list := s.observers.Load(); list != nil {
			for _, o := range *list {
				if ro, ok := o.(RetryObserver); ok {
					ro.WriteRetry(op, retried)
				}
			}
		}
	}
	s.retry = &retry
	return s, nil
}

// Retry runs write, and runs it again while another writer gets ahead of
// it, within the service's policy (Config.Retry; see store.RetryPolicy.Do).
// write is a write to a session of a tenant that does not depend on the
// log's position: its caller stated none, no If-Match and no expected last
// sequence number. It is appended conditionally on what it read, and each
// try reads what it needs again. Each try takes the session's turn
// among the service's writes that read before they write, so that those
// never get ahead of one another. The service's own such writes (tool
// results that complete stored calls, pops, clears and compactions) go
// through it; a transport's (op names it) may too. Every lost race is
// reported to the observers that are RetryObservers. When every try
// lost, the error is a *store.ContendedError (store.ErrContended, which
// wraps agentmem.ErrUnavailable).
//
// A try must be quick, since the session's other such writes wait for
// it, and must not itself make a write of the service that takes the
// turn (one without a position of its own): the turn is not reentrant.
// Writes with an expected last sequence number take no turn.
func (s *Service) Retry(ctx context.Context, tenant, id, op string, write func(attempt int) error) error {
	return s.retryIn(tenant, id).Do(ctx, op, write)
}

// retryIn returns the service's policy with each try in the session's
// turn.
func (s *Service) retryIn(tenant, id string) *store.RetryPolicy {
	p := *s.retry
	key := store.Key{Tenant: tenant, ID: id}
	p.Turn = func(ctx context.Context) (func(), error) { return s.turns.Wait(ctx, key) }
	return &p
}

// Store returns the store the service reads and writes.
func (s *Service) Store() *store.Store { return s.st }

// Counter returns the service's default token counter.
func (s *Service) Counter() tokenizer.Counter { return s.counter }

// MaxContextTokens returns the largest context the service serves.
func (s *Service) MaxContextTokens() int { return s.cfg.MaxContextTokens }

// Features says which of its optional parts a service has (Features).
type Features struct {
	// Facts: a context can show the user's facts (ContextRequest.Facts).
	Facts bool
	// Recall: a context can show turns of the user's other sessions
	// (ContextRequest.Recall).
	Recall bool
	// Blocks: contexts show the session's and its user's memory blocks.
	Blocks bool
	// LLMSummarizer: the summarize strategy can ask a language model.
	LLMSummarizer bool
	// Extraction: facts can be learnt from the sessions' turns in the
	// background (Config.Extraction).
	Extraction bool
}

// Features returns the optional parts the service has, from its Config.
func (s *Service) Features() Features {
	return Features{Facts: s.cfg.Facts != nil, Recall: s.cfg.Recall != nil, Blocks: s.cfg.Blocks != nil,
		LLMSummarizer: s.cfg.Summarizer != nil, Extraction: s.cfg.Extraction}
}

func (s *Service) now() time.Time { return s.clock() }

// Observe adds an observer of the context cache: it is told of every
// event from now on, and of the cache's size now; a RetryObserver is
// told of the writes that lose races too (see Retry).
func (s *Service) Observe(o Observer) {
	for {
		old := s.observers.Load()
		var list []Observer
		if old != nil {
			list = append(list, *old...)
		}
		list = append(list, o)
		if s.observers.CompareAndSwap(old, &list) {
			break
		}
	}
	st := s.CacheStats()
	o.CacheSize(st.Bytes, st.Sessions)
}

// event reports a cache event to the observers.
func (s *Service) event(name string) {
	if list := s.observers.Load(); list != nil {
		for _, o := range *list {
			o.CacheEvent(name)
		}
	}
}

// size reports the cache's size to the observers.
func (s *Service) size(bytes int64, sessions int) {
	if list := s.observers.Load(); list != nil {
		for _, o := range *list {
			o.CacheSize(bytes, sessions)
		}
	}
}

// defaultForm is the form a cached replica renders every step it puts in:
// the OpenAI format with the default counter.
func (s *Service) defaultForm() form { return form{render.NameOpenAI, s.counter.Name()} }

// Create creates a session in req.Tenant (store.Store.Create) with its
// settings as they apply, so that what the session reads back is what its
// contexts and compactions use. A missing pinning is
// agentmem.DefaultPinning. An automatic compaction has its defaults filled
// in (store.AutoCompact.WithDefaults); the summarizer is the LLM one when
// the service has one. The LLM summarizer on a service without
// one is an *agentmem.InvalidError, and so is a session that opts in to
// fact extraction (ExtractFacts true) without a user or on a service
// without Config.Extraction. ExtractFacts is stored as given: a session
// that does not say follows the service's default as it is at each turn.
func (s *Service) Create(ctx context.Context, req store.CreateRequest) (*store.Session, error) {
	if x := req.ExtractFacts; x != nil && *x {
		switch {
		case !s.cfg.Extraction:
			return nil, &agentmem.InvalidError{Field: "extract_facts", Reason: "this server extracts no facts: it has no model configured for it (serve --llm-base-url); leave extract_facts out"}
		case req.UserID == "":
			return nil, &agentmem.InvalidError{Field: "extract_facts", Reason: "needs a user_id: the facts learnt are about the session's user"}
		}
	}
	if req.Pinning == nil {
		p := agentmem.DefaultPinning
		req.Pinning = &p
	}
	if a := req.AutoCompact; a != nil {
		if err := store.ValidateAutoCompact(a); err != nil {
			return nil, err
		}
		if a.Summarizer == store.SummarizerLLM && s.cfg.Summarizer == nil {
			return nil, &agentmem.InvalidError{Field: "auto_compact.summarizer", Reason: `"llm" needs an LLM summarizer, and this server has none configured`}
		}
		filled := a.WithDefaults(s.defaultSummarizer())
		req.AutoCompact = &filled
	}
	sess, err := s.st.Create(ctx, req)
	if err == nil && sess.ParentID != "" {
		s.wake() // a branch's inherited history is indexed as its own
	}
	return sess, err
}

// defaultSummarizer names the summarizer an automatic compaction uses
// when its settings name none: the LLM one when the service has one.
func (s *Service) defaultSummarizer() string {
	if s.cfg.Summarizer != nil {
		return store.SummarizerLLM
	}
	return store.SummarizerExtractive
}

// Extracts reports whether facts are learnt from the session's turns: it
// has a user, and it opted in (ExtractFacts true) or left it to the
// service's default (Config.ExtractByDefault), on a service with
// Config.Extraction. It is a factextract.Learner's Config.Select.
func (s *Service) Extracts(sess *store.Session) bool {
	if !s.cfg.Extraction || sess.UserID == "" {
		return false
	}
	if sess.ExtractFacts != nil {
		return *sess.ExtractFacts
	}
	return s.cfg.ExtractByDefault
}

// Get returns the session of a tenant with this ID.
func (s *Service) Get(ctx context.Context, tenant, id string) (*store.Session, error) {
	return s.st.Get(ctx, tenant, id)
}

// List lists the sessions of the tenant req.Tenant only, the default
// tenant "" included: a transport serves one tenant per request.
func (s *Service) List(ctx context.Context, req store.ListRequest) (*store.ListResponse, error) {
	req.ExactTenant = true
	return s.st.List(ctx, req)
}

// Delete deletes a session of a tenant (store.Store.Delete), drops its
// cached replica and deletes its memory blocks (Config.Blocks).
func (s *Service) Delete(ctx context.Context, tenant, id string) error {
	err := s.st.Delete(ctx, tenant, id)
	s.cache.evict(store.Key{Tenant: tenant, ID: id})
	if err != nil {
		return err
	}
	s.wake()
	// The session's memory blocks go with it (a session made again with
	// the ID starts without them). The session is deleted whatever
	// happens to them: a failure here is the error, a retry of the
	// delete finds no session, and a follower of the store's deletions
	// deletes them later (CleanBlocks).
	if d, ok := s.cfg.Blocks.(ownerDeleter); ok {
		return d.DeleteOwner(ctx, tenant, blocks.Session(id))
	}
	return nil
}

// ForkRequest creates a branch of a session (Fork).
type ForkRequest struct {
	// Tenant and SessionID name the parent.
	Tenant    string
	SessionID string
	// AtSeq is the sequence number to fork at; 0 means the parent's last.
	AtSeq int64
	// ID is the branch's ID; empty: a new one.
	ID string
	// Metadata and Retention default to the parent's (a persistent
	// parent's branch with a TTL gets store.SessionRetention).
	Metadata  map[string]string
	Retention store.Retention
	TTL       time.Duration
	// Pinning, AutoCompact and ExtractFacts default to the parent's: a
	// branch goes on as its parent would have, unless it is given
	// settings of its own.
	Pinning      *agentmem.Pinning
	AutoCompact  *store.AutoCompact
	ExtractFacts *bool
}

// Fork creates a branch of a session: a session of the same tenant, user
// and agent that sees the parent's log up to AtSeq, created as Create
// creates one. An AtSeq after the
// parent's last sequence number is an *agentmem.InvalidError (field
// "at_seq").
func (s *Service) Fork(ctx context.Context, req ForkRequest) (*store.Session, error) {
	parent, err := s.st.Get(ctx, req.Tenant, req.SessionID)
	if errors.Is(err, agentmem.ErrNotFound) && req.ID != "" {
		// An ID in use is a conflict whatever else is wrong, as the
		// store's Create answers it.
		if _, gerr := s.st.Get(ctx, req.Tenant, req.ID); gerr == nil {
			return nil, &store.ExistsError{Tenant: req.Tenant, ID: req.ID}
		}
	}
	if err != nil {
		return nil, err
	}
	if req.AtSeq > parent.LastSeq {
		return nil, &agentmem.InvalidError{Field: "at_seq", Reason: fmt.Sprintf("%d is after the session's last sequence number %d", req.AtSeq, parent.LastSeq)}
	}
	cr := store.CreateRequest{
		ID: req.ID, Tenant: parent.Tenant, UserID: parent.UserID, Agent: parent.Agent,
		Metadata: req.Metadata, Retention: req.Retention, TTL: req.TTL,
		ParentID: parent.ID, ForkSeq: req.AtSeq,
		Pinning: req.Pinning, AutoCompact: req.AutoCompact, ExtractFacts: req.ExtractFacts,
	}
	if cr.Metadata == nil {
		cr.Metadata = parent.Metadata
	}
	if cr.Pinning == nil {
		cr.Pinning = parent.Pinning
	}
	if cr.AutoCompact == nil {
		cr.AutoCompact = parent.AutoCompact
	}
	if cr.ExtractFacts == nil {
		cr.ExtractFacts = parent.ExtractFacts
	}
	if cr.Retention == "" {
		cr.Retention = parent.Retention
		if cr.Retention == store.Persistent && req.TTL > 0 {
			cr.Retention = store.SessionRetention
		}
	}
	return s.Create(ctx, cr)
}

// Append appends steps (and a compaction record) to a session's log
// (store.Store.Append): the store checks everything, in the append's own
// transaction. An append without ExpectedLastSeq that fails on a conflict
// anyway (a backend that saw another appender's entry where it did not
// expect one) is tried again (Retry).
func (s *Service) Append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	if req.ExpectedLastSeq != nil {
		return s.append(ctx, req)
	}
	var resp *store.AppendResponse
	err := s.retry.Do(ctx, "append", func(int) error {
		var err error
		resp, err = s.append(ctx, req)
		return err
	})
	return resp, err
}

// append appends to the store and tells the context cache and the
// automatic compaction of what it stored.
func (s *Service) append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	resp, err := s.st.Append(ctx, req)
	if err == nil {
		s.appended(req, resp)
	}
	return resp, err
}

// appended is told of an append that succeeded. The entries it stored join
// the session's cached working set when they follow what it holds, so the
// next use need not read and decode them from the log again. The automatic
// compaction, if any, looks at the session.
func (s *Service) appended(req store.AppendRequest, resp *store.AppendResponse) {
	s.cache.appended(req, resp)
	s.wake()
}

// Read reads a session's log (store.Store.Read).
func (s *Service) Read(ctx context.Context, req store.ReadRequest) (*store.ReadResponse, error) {
	return s.st.Read(ctx, req)
}

// workingSets are the working sets the service's message-level writes
// (AppendMessages, Pop, Clear) change: the context cache's, and what they
// append goes to the cache as it is written.
type workingSets struct{ s *Service }

// OpenActions implements workingSetSource from the session's cached
// replica, brought up to date with the log (read from the store when the
// service keeps no cache).
func (w workingSets) OpenActions(ctx context.Context, key store.Key, msgs []agentmem.Message, flush bool) ([]*agentmem.ActionStep, int64, error) {
	if w.s.cache.max <= 0 {
		return newStoreWorkingSets(w.s.st).OpenActions(ctx, key, msgs, flush)
	}
	var open []*agentmem.ActionStep
	var seq int64
	err := w.s.cache.with(ctx, key, func(_ *view, st *viewState) {
		open, seq = st.rep.OpenActions(msgs, flush), st.seq
	})
	return open, seq, err
}

// WorkingSet implements workingSetSource from the session's cached replica,
// brought up to date with the log (read from the store when the service
// keeps no cache). It returns copies of its steps, the numbers of those
// that are modified copies, and a Session. Only the Session's key, user,
// creation time and LastSeq are set.
func (w workingSets) WorkingSet(ctx context.Context, key store.Key) (*store.ReadResponse, error) {
	if w.s.cache.max <= 0 {
		return newStoreWorkingSets(w.s.st).WorkingSet(ctx, key)
	}
	var resp *store.ReadResponse
	err := w.s.cache.with(ctx, key, func(v *view, st *viewState) {
		resp = &store.ReadResponse{Steps: st.rep.Steps(),
			Session: &store.Session{Tenant: key.Tenant, ID: key.ID, UserID: st.user, CreatedAt: st.created, LastSeq: st.seq}}
		for _, s := range resp.Steps {
			if n := s.Info().Number; v.copies[n] {
				resp.Replaced = append(resp.Replaced, int64(n))
			}
		}
	})
	return resp, err
}

// Appended implements workingSetSource.
func (w workingSets) Appended(_ context.Context, req store.AppendRequest, resp *store.AppendResponse) {
	w.s.appended(req, resp)
}
