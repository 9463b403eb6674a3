package remote

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/internal/apiconv"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storekit"
)

// readConsistencyAttempts bounds how often Read starts over when the
// session changed between its requests.
const readConsistencyAttempts = 3

// Store is the store.Driver over a client.Client: a remote memory on an
// agentmem server, which New wraps in the portable store.Store. A
// program written against a local store switches to the server by
// changing the constructor (see the package documentation for what the
// API cannot do).
//
// A Store is safe for concurrent use by many goroutines.
type Store struct {
	c         *client.Client
	closed    atomic.Bool
	tenantMu  sync.Mutex
	tenant    string // WithTenant, or learned from a session
	tenantSet bool
}

var (
	_ store.Driver = (*Store)(nil)
	_ store.Pinger = (*Store)(nil)
)

// Option configures a Store.
type Option func(*Store)

// WithTenant tells the store the tenant of the client's API key (the
// server has no route that says it). The store.Store methods need it
// only for a request that names a tenant: the server puts every session
// in the key's tenant, so a request for another one is refused before it
// is sent. Without it, the store learns the tenant from the first
// session the server returns.
func WithTenant(tenant string) Option {
	return func(s *Store) { s.tenant, s.tenantSet = tenant, true }
}

// New returns the store of the server c talks to. Close closes c. Its
// driver, with the methods that are its own (Client, AppendMessages,
// AppendSteps), is NewDriver's, or reached through store.Store.As.
func New(c *client.Client, opts ...Option) *store.Store { return store.New(NewDriver(c, opts...)) }

// NewDriver returns the driver of the store of the server c talks to, as
// New does without the portable store.Store around it.
func NewDriver(c *client.Client, opts ...Option) *Store {
	s := &Store{c: c}
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
	return s
}

// Client returns the store's client, for the server's other routes.
func (s *Store) Client() *client.Client { return s.c }

// Close implements store.Driver: it closes the client, and later calls
// fail with store.ErrClosed. Calling it twice returns store.ErrClosed, as
// a local store does.
func (s *Store) Close() error {
	s.closed.Store(true)
	return s.c.Close()
}

// Ping checks that the server is up and its store reachable (GET
// /readyz). It lets a server.Server run over a Store report readiness
// (store.Pinger).
func (s *Store) Ping(ctx context.Context) error { return s.c.Ping(ctx) }

// ttlSeconds converts a TTL to the API's whole seconds.
func ttlSeconds(op string, ttl time.Duration) (int64, error) {
	if ttl%time.Second != 0 {
		return 0, &UnsupportedError{Op: op, Reason: fmt.Sprintf("the API takes a TTL in whole seconds, not %v", ttl)}
	}
	return int64(ttl / time.Second), nil
}

// Create implements store.Driver with POST /v1/sessions, or POST
// /v1/sessions/{parent}/fork for a branch (req.ParentID set).
//
// The server puts the session in the API key's tenant: a req.Tenant
// other than that one is refused (see WithTenant). A branch gets its
// parent's user and agent: a req.UserID or req.Agent that differs from
// the parent's is refused, and a branch created without Metadata gets
// its parent's metadata. TTLs are whole seconds. These refusals are
// *UnsupportedError, before anything is written.
//
// The server stores a session's settings as they apply: a session
// created without a Pinning gets agentmem.DefaultPinning, an AutoCompact
// its defaults, and a branch created without them (or without
// ExtractFacts) its parent's.
func (s *Store) Create(ctx context.Context, req store.CreateRequest) (*store.Session, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	ttl, err := ttlSeconds("Create", req.TTL)
	if err != nil {
		return nil, err
	}
	if err := s.checkTenant("Create", req.Tenant); err != nil {
		return nil, err
	}
	var sess *api.Session
	if req.ParentID != "" {
		if req.UserID != "" || req.Agent != "" {
			parent, err := s.Get(ctx, req.Tenant, req.ParentID)
			if err != nil {
				return nil, err
			}
			if (req.UserID != "" && req.UserID != parent.UserID) || (req.Agent != "" && req.Agent != parent.Agent) {
				return nil, &UnsupportedError{Op: "Create", Reason: "a branch gets its parent's user and agent; the API cannot give it others"}
			}
		}
		retention := req.Retention
		if retention == "" {
			retention = store.SessionRetention // the store's default, not the parent's
		}
		sess, err = s.c.Fork(ctx, req.ParentID, api.ForkRequest{AtSeq: req.ForkSeq, ID: req.ID, Metadata: req.Metadata,
			Retention: string(retention), TTLSeconds: ttl,
			Pinning: apiconv.Pinning(req.Pinning), AutoCompact: apiconv.AutoCompact(req.AutoCompact), ExtractFacts: apiconv.Bool(req.ExtractFacts)})
	} else {
		sess, err = s.c.CreateSession(ctx, api.CreateSessionRequest{ID: req.ID, UserID: req.UserID, Agent: req.Agent, Metadata: req.Metadata,
			Retention: string(req.Retention), TTLSeconds: ttl,
			Pinning: apiconv.Pinning(req.Pinning), AutoCompact: apiconv.AutoCompact(req.AutoCompact), ExtractFacts: apiconv.Bool(req.ExtractFacts)})
	}
	if err != nil {
		return nil, existsError(err, req)
	}
	if req.Tenant != "" && sess.Tenant != req.Tenant {
		// WithTenant named the wrong tenant: undo.
		_ = s.c.DeleteSession(ctx, sess.ID)
		return nil, &UnsupportedError{Op: "Create", Reason: fmt.Sprintf("the server put the session in the API key's tenant %q, not %q (WithTenant is wrong); it was deleted", sess.Tenant, req.Tenant)}
	}
	s.learnTenant(sess.Tenant)
	return apiconv.SessionFromAPI(sess), nil
}

// open returns store.ErrClosed after Close, before a request is checked.
// (A client closed directly fails every call with client.ErrClosed,
// which ClassifyError classifies as store.ErrClosed.)
func (s *Store) open() error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

// checkTenant refuses, with an *UnsupportedError, a request (op) for a
// session of a tenant other than the API key's: the server serves that
// tenant only. The empty tenant stands for the key's, whatever it is; a
// named one must be the key's, as the store knows it (WithTenant, or
// learnt from an answer).
func (s *Store) checkTenant(op, tenant string) error {
	if tenant == "" {
		return nil
	}
	t, ok := s.knownTenant()
	switch {
	case !ok:
		return &UnsupportedError{Op: op, Reason: fmt.Sprintf("the server serves the API key's tenant, and the store does not know it to compare with %q (use WithTenant)", tenant)}
	case t != tenant:
		return &UnsupportedError{Op: op, Reason: fmt.Sprintf("the server serves the API key's tenant, %q, not %q", t, tenant)}
	}
	return nil
}

// learnTenant records the tenant of a session the server returned, when
// none was configured.
func (s *Store) learnTenant(t string) {
	s.tenantMu.Lock()
	defer s.tenantMu.Unlock()
	if !s.tenantSet {
		s.tenant, s.tenantSet = t, true
	}
}

// knownTenant returns the key's tenant, if known.
func (s *Store) knownTenant() (string, bool) {
	s.tenantMu.Lock()
	defer s.tenantMu.Unlock()
	return s.tenant, s.tenantSet
}

// Get implements store.Driver with GET /v1/sessions/{id}, in the API
// key's tenant (see checkTenant).
func (s *Store) Get(ctx context.Context, tenant, id string) (*store.Session, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	if err := s.checkTenant("Get", tenant); err != nil {
		return nil, err
	}
	sess, err := s.c.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	s.learnTenant(sess.Tenant)
	return apiconv.SessionFromAPI(sess), nil
}

// List implements store.Driver with GET /v1/sessions. The server lists the
// API key's tenant's sessions only; a req.Tenant filter other than that
// tenant (with ExactTenant, the default tenant included) gives an empty
// list. The sessions the server left out as damaged are in the answer's
// Damaged, and go to the context's damage reporter
// (agentmem.WithDamageReporter), as a local store's do.
func (s *Store) List(ctx context.Context, req store.ListRequest) (*store.ListResponse, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	if _, _, err := store.ValidateList(req); err != nil {
		return nil, err
	}
	out, err := s.c.ListSessions(ctx, client.ListQuery{UserID: req.UserID, Agent: req.Agent, ParentID: req.ParentID,
		PageSize: min(req.PageSize, store.MaxPageSize), PageToken: req.PageToken})
	if err != nil {
		return nil, err
	}
	resp := &store.ListResponse{NextPageToken: out.NextPageToken}
	for _, sess := range out.Sessions {
		s.learnTenant(sess.Tenant)
		// Every session listed is the key's tenant's: the filter keeps
		// all or none.
		if (req.Tenant != "" || req.ExactTenant) && sess.Tenant != req.Tenant {
			return &store.ListResponse{}, nil
		}
		resp.Sessions = append(resp.Sessions, apiconv.SessionFromAPI(sess))
	}
	tenant, _ := s.knownTenant()
	resp.Damaged = apiconv.DamagedFromAPI("session", tenant, out.Damaged)
	for _, d := range resp.Damaged {
		agentmem.ReportDamaged(ctx, d)
	}
	return resp, nil
}

// ReportDamaged is a client.DamageHandler that reports each record to the
// context's damage reporter (agentmem.WithDamageReporter), as a local
// store reports those it leaves out: give it to the client with
// client.WithDamageHandler.
func ReportDamaged(ctx context.Context, kind string, d api.DamagedRecord) {
	for _, de := range apiconv.DamagedFromAPI(kind, "", []api.DamagedRecord{d}) {
		agentmem.ReportDamaged(ctx, de)
	}
}

// Delete implements store.Driver with DELETE /v1/sessions/{id}, in the
// API key's tenant (see checkTenant).
func (s *Store) Delete(ctx context.Context, tenant, id string) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := s.checkTenant("Delete", tenant); err != nil {
		return err
	}
	return s.c.DeleteSession(ctx, id)
}

// Append implements store.Driver with POST /v1/sessions/{id}/steps, with
// ExpectedLastSeq as If-Match; a request with a compaction record sends
// the steps and the record together (client.AppendWithCompaction), so a
// bound memory's prunes and summaries work as on a local store. The
// server bounds a request to api.MaxStepsPerRequest steps and its body
// size (413, ErrInvalid). Steps have IDs, so a request that failed with a
// retryable error is sent again (client.WithRetries): the server stores
// its steps once.
//
// The route fingerprints what it is sent itself, so req.Idempotency is not
// sent: the step IDs, which a key derives, make a retry idempotent (as for
// a session appended to before keys were recorded, see
// store.AppendRequest). A request that only checks its key (store.KeyOnly)
// finds no record and stores nothing.
func (s *Store) Append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	if err := store.ValidateAppend(req); err != nil {
		return nil, err
	}
	if err := s.checkTenant("Append", req.Tenant); err != nil {
		return nil, err
	}
	if store.KeyOnly(req) {
		sess, err := s.Get(ctx, req.Tenant, req.SessionID)
		if err != nil {
			return nil, err
		}
		return &store.AppendResponse{LastSeq: sess.LastSeq}, nil
	}
	steps, err := apiconv.Steps(req.Steps)
	if err != nil {
		return nil, err
	}
	opts := client.AppendOptions{IfMatch: req.ExpectedLastSeq}
	var out *api.AppendResponse
	if req.Compaction != nil {
		comp, err := apiconv.CompactionRecord(req.Compaction)
		if err != nil {
			return nil, err
		}
		out, err = s.c.AppendWithCompaction(ctx, req.SessionID, api.AppendStepsRequest{Steps: steps, Compaction: comp}, opts)
		if err != nil {
			return nil, err
		}
	} else if out, err = s.c.AppendSteps(ctx, req.SessionID, steps, opts); err != nil {
		return nil, err
	}
	return &store.AppendResponse{Seqs: out.Seqs, LastSeq: out.LastSeq, CompactionSeq: out.CompactionSeq}, nil
}

// Read implements store.Driver with GET /v1/sessions/{id} and GET
// /v1/sessions/{id}/steps, in pages of api.DefaultReadLimit entries.
//
// The API differs from a local store in two ways. It does not say when
// the server appended a step, so Entry.Time is zero for step entries
// (compaction entries have theirs). And it has no working-set read: with
// WorkingSet the store reads the whole visible log and computes the
// working set as a store does (store.WorkingSet), which costs the whole
// log, not just the working set.
//
// The session and the entries come from separate requests. If the
// session changes between them the store reads again (a few times). The
// Session returned always has the LastSeq of the log read, so a writer
// using it as ExpectedLastSeq gets a conflict rather than skipping
// entries it has not seen.
func (s *Store) Read(ctx context.Context, req store.ReadRequest) (*store.ReadResponse, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		sess, err := s.Get(ctx, req.Tenant, req.SessionID)
		if err != nil {
			return nil, err
		}
		var page *api.ReadStepsResponse
		switch {
		case req.WorkingSet:
			page, err = s.c.ReadLog(ctx, req.SessionID, 0, 0)
		case req.Last > 0 && req.Last <= api.MaxReadLimit:
			page, err = s.c.ReadSteps(ctx, req.SessionID, client.ReadQuery{After: req.After, Last: req.Last})
		case req.Last > 0:
			page, err = s.c.ReadLog(ctx, req.SessionID, req.After, 0)
		default:
			page, err = s.c.ReadLog(ctx, req.SessionID, req.After, req.Limit)
		}
		if err != nil {
			return nil, err
		}
		entries, err := entries(page, req.After)
		if err != nil {
			return nil, err
		}
		if req.Last > api.MaxReadLimit {
			entries = storekit.SelectEntries(entries, store.ReadRequest{Last: req.Last})
		}
		if page.LastSeq != sess.LastSeq && attempt < readConsistencyAttempts {
			continue
		}
		sess.LastSeq = page.LastSeq
		if req.WorkingSet {
			return &store.ReadResponse{Session: sess, Steps: store.WorkingSet(entries), Replaced: store.ReplacedSeqs(entries)}, nil
		}
		return &store.ReadResponse{Session: sess, Entries: entries}, nil
	}
}

// entries returns the log entries of a read after sequence number after,
// checking that each is in its place.
func entries(page *api.ReadStepsResponse, after int64) ([]store.Entry, error) {
	es, err := apiconv.EntriesFromAPI(page)
	if err != nil {
		return nil, malformed("a log that does not decode: %w", err)
	}
	for i, e := range es {
		if e.Seq <= after || (i > 0 && e.Seq == es[i-1].Seq) || e.Seq > page.LastSeq {
			return nil, malformed("a log entry out of place (seq %d)", e.Seq)
		}
	}
	return es, nil
}

// Prune implements store.Driver: the API has no route for it (retention is
// the server's to apply), so it is an *UnsupportedError.
func (s *Store) Prune(ctx context.Context, req store.PruneRequest) (*store.PruneResponse, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	return nil, &UnsupportedError{Op: "Prune", Reason: "the API has no route for it; retention is applied by the server's own store"}
}

// AppendMessages appends chat messages to a session (POST
// /v1/sessions/{id}/messages; see client.Client.AppendMessages): the
// messages are sent in OpenAI's wire form (render.OpenAIRequest), and the
// server folds them into steps. Errors are mapped as by MapError.
func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs []agentmem.Message, opts client.AppendOptions) (*api.AppendResponse, error) {
	out, err := s.c.AppendMessages(ctx, sessionID, apiconv.OpenAIMessages(msgs), opts)
	return out, MapError(err)
}

// AppendSteps appends typed steps to a session (POST
// /v1/sessions/{id}/steps; see client.Client.AppendSteps). Unlike Append,
// steps may lack IDs and times: a step without an ID gets one derived
// from opts.IdempotencyKey (or a new key), one without a time the
// server's clock. Errors are mapped as by MapError.
func (s *Store) AppendSteps(ctx context.Context, sessionID string, steps []agentmem.Step, opts client.AppendOptions) (*api.AppendResponse, error) {
	raw, err := apiconv.Steps(steps)
	if err != nil {
		return nil, err
	}
	out, err := s.c.AppendSteps(ctx, sessionID, raw, opts)
	return out, MapError(err)
}
