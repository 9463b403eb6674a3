package episodic

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/patterns/internal/compose"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/summarize"
	"github.com/agentmem/agentmem/tokenizer"
)

// DefaultSummaryTokens bounds an episode's summary when
// Options.SummaryTokens is zero.
const DefaultSummaryTokens = 300

// Session and step metadata keys this package writes. Keys of the caller's
// episode metadata must not start with ReservedPrefix.
const (
	ReservedPrefix = "agentmem."
	metaPattern    = "agentmem.pattern"
	metaStarted    = "agentmem.started"
	metaEnd        = "agentmem.episode"
)

// startedLayout writes start times in UTC at a fixed width, so that they
// sort as strings.
const startedLayout = "2006-01-02T15:04:05.000000000Z07:00"

// Options configures a Memory. The zero value works: in-memory store and
// index, the extractive summarizer.
type Options struct {
	// Tenant, UserID and Agent scope the episodes: a Memory sees only
	// the episodes of its scope (empty UserID or Agent: any).
	Tenant string
	UserID string
	Agent  string
	// Store keeps the episodes; nil means a new in-memory store, closed by
	// Close.
	Store *store.Store
	// Index ranks episodes for Recall; nil means a new in-memory index,
	// closed by Close.
	Index *recall.Index
	// Memory configures the current episode's agentmem.Memory (counter,
	// clock, format); Journal must be nil. Its Clock also gives episode
	// start times (nil: time.Now).
	Memory agentmem.Options
	// Summarizer writes the summary of an ended episode; nil means
	// summarize.Extractive with the memory's counter.
	Summarizer agentmem.Summarizer
	// SummaryTokens bounds a summary; 0 means DefaultSummaryTokens.
	SummaryTokens int
}

// Episode is an episode and, once it has ended, its summary.
type Episode struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant,omitempty"`
	UserID string `json:"user_id,omitempty"`
	Agent  string `json:"agent,omitempty"`
	// Metadata is what Start was given.
	Metadata map[string]string `json:"metadata,omitempty"`
	Started  time.Time         `json:"started"`
	// Ended is when End ran; zero while the episode is current.
	Ended time.Time `json:"ended,omitzero"`
	// Summary is the summary written at the end.
	Summary string `json:"summary,omitempty"`
	// Covers lists the step numbers the summary covers.
	Covers []agentmem.Range `json:"covers,omitempty"`
}

// Hit is an episode Recall found.
type Hit struct {
	Episode Episode `json:"episode"`
	// Matches are the texts of the episode's documents that matched,
	// best first (at most three).
	Matches []string `json:"matches"`
}

// Memory is the episodic memory of one scope. It is safe for concurrent
// use.
type Memory struct {
	mu      sync.Mutex
	opts    Options
	idx     episodeIndex
	counter tokenizer.Counter
	cur     *store.Bound
	owned   []func() error
}

// Open opens the episodic memory of a scope, resuming its current episode
// (the newest one, if it has not ended).
func Open(ctx context.Context, opts Options) (*Memory, error) {
	if opts.Memory.Journal != nil {
		return nil, &agentmem.InvalidError{Field: "memory.journal", Reason: "must be nil: an episode journals to its session"}
	}
	if opts.SummaryTokens <= 0 {
		opts.SummaryTokens = DefaultSummaryTokens
	}
	m := &Memory{opts: opts}
	if m.opts.Store == nil {
		st := memstore.New(memstore.Options{Clock: opts.Memory.Clock})
		m.opts.Store = st
		m.owned = append(m.owned, st.Close)
	}
	if m.opts.Index == nil {
		ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
		m.opts.Index = ix
		m.owned = append(m.owned, ix.Close)
	}
	m.counter = agentmem.New(opts.Memory).Counter()
	if m.opts.Summarizer == nil {
		m.opts.Summarizer = summarize.Extractive{Counter: m.counter}
	}
	m.idx = episodeIndex{ix: m.opts.Index, tenant: opts.Tenant, user: opts.UserID, agent: opts.Agent,
		candidateCap: 2000, snippetsOfHit: 3}
	newest, err := m.list(ctx, 1)
	if err == nil && len(newest) == 1 && newest[0].Ended.IsZero() {
		m.cur, err = store.OpenTenantMemory(ctx, m.opts.Store, newest[0].Tenant, newest[0].ID, m.opts.Memory)
	}
	if err != nil {
		return nil, errors.Join(err, m.closeOwned())
	}
	return m, nil
}

func (m *Memory) now() time.Time {
	if m.opts.Memory.Clock != nil {
		return m.opts.Memory.Clock().UTC()
	}
	return time.Now().UTC()
}

// Close closes the current episode's binding and what Open created. The
// episode stays current for the next Open. A store and index passed in
// stay open.
func (m *Memory) Close(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var err error
	if m.cur != nil {
		err = m.cur.Close(ctx)
		m.cur = nil
	}
	return errors.Join(err, m.closeOwned())
}

func (m *Memory) closeOwned() error {
	var errs []error
	for _, c := range m.owned {
		errs = append(errs, c())
	}
	m.owned = nil
	return errors.Join(errs...)
}

// Start begins a new episode with the given metadata (such as a title),
// ending the current one first (see End). Metadata keys must not start
// with ReservedPrefix, and the store's limits on session metadata apply.
func (m *Memory) Start(ctx context.Context, meta map[string]string) (*Episode, error) {
	for k := range meta {
		if strings.HasPrefix(k, ReservedPrefix) {
			return nil, &agentmem.InvalidError{Field: "metadata", Reason: fmt.Sprintf("key %q is reserved", k)}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur != nil {
		if _, err := m.end(ctx); err != nil {
			return nil, err
		}
	}
	started := m.now()
	md := make(map[string]string, len(meta)+2)
	for k, v := range meta {
		md[k] = v
	}
	md[metaPattern] = "episode"
	md[metaStarted] = started.Format(startedLayout)
	cur, err := store.CreateMemory(ctx, m.opts.Store, store.CreateRequest{
		ID: "ep-" + agentmem.NewID(), Tenant: m.opts.Tenant, UserID: m.opts.UserID, Agent: m.opts.Agent,
		Metadata: md, Retention: store.Persistent,
	}, m.opts.Memory)
	if err != nil {
		return nil, err
	}
	m.cur = cur
	ep, err := episodeOf(cur.Session())
	if err != nil {
		return nil, err
	}
	if d, ok := m.idx.metaDoc(cur.Session(), ep.Metadata, ep); ok {
		if err := m.idx.put(ctx, []recall.Doc{d}); err != nil {
			return nil, err
		}
	}
	return ep, nil
}

// Current returns the current episode's memory, or nil between episodes.
// Read from it freely (Context, Steps); add through Memory.Add, which also
// indexes the step for Recall.
func (m *Memory) Current() *store.Bound {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur
}

// Add adds a step to the current episode and indexes it. Without a current
// episode the error wraps ErrNotFound: call Start.
func (m *Memory) Add(ctx context.Context, s agentmem.Step) (agentmem.StepInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == nil {
		return agentmem.StepInfo{}, fmt.Errorf("episodic: no current episode (call Start): %w", agentmem.ErrNotFound)
	}
	info, err := m.cur.Add(ctx, s)
	if err != nil {
		return info, err
	}
	stored, ok := m.cur.Step(info.Number)
	if !ok {
		return info, nil // pruned at once by the memory's own policy; End indexes it
	}
	entry := store.Entry{Seq: int64(info.Number), Kind: store.StepEntry, Step: stored, Time: info.Time}
	return info, m.idx.put(ctx, m.idx.docs(m.cur.Session(), entry))
}

// End ends the current episode. Its steps are summarized with the
// configured Summarizer, the summary is appended to its log as its last
// step, and the whole episode is indexed again. Without a current episode
// the error wraps ErrNotFound.
func (m *Memory) End(ctx context.Context) (*Episode, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == nil {
		return nil, fmt.Errorf("episodic: no current episode: %w", agentmem.ErrNotFound)
	}
	return m.end(ctx)
}

func (m *Memory) end(ctx context.Context) (*Episode, error) {
	sess := m.cur.Session()
	resp, err := m.opts.Store.Read(ctx, store.ReadRequest{Tenant: sess.Tenant, SessionID: sess.ID})
	if err != nil {
		return nil, err
	}
	var steps []agentmem.Step
	for _, e := range resp.Entries {
		if e.Kind == store.StepEntry {
			steps = append(steps, e.Step)
		}
	}
	text, covers, err := compose.Summarize(ctx, m.opts.Summarizer, m.counter, steps, m.opts.SummaryTokens)
	if err != nil {
		return nil, fmt.Errorf("episodic: summarize episode %s: %w", sess.ID, err)
	}
	sum := &agentmem.SummaryStep{StepInfo: agentmem.StepInfo{Time: m.now(), Metadata: map[string]string{metaEnd: "summary"}},
		Summary: text, Covers: covers}
	if _, err := m.cur.Add(ctx, sum); err != nil {
		return nil, fmt.Errorf("episodic: end episode %s: %w", sess.ID, err)
	}
	if err := m.reindex(ctx, sess); err != nil {
		return nil, err
	}
	if err := m.cur.Close(ctx); err != nil {
		return nil, err
	}
	m.cur = nil
	return m.get(ctx, sess.ID)
}

// reindex writes every document of an episode again.
func (m *Memory) reindex(ctx context.Context, sess *store.Session) error {
	resp, err := m.opts.Store.Read(ctx, store.ReadRequest{Tenant: sess.Tenant, SessionID: sess.ID})
	if err != nil {
		return err
	}
	docs := m.idx.docs(resp.Session, resp.Entries...)
	ep, err := episodeOf(resp.Session)
	if err != nil {
		return err
	}
	if d, ok := m.idx.metaDoc(resp.Session, ep.Metadata, ep); ok {
		docs = append(docs, d)
	}
	return m.idx.put(ctx, docs)
}

// Reindex indexes every episode of the scope again (idempotent): after a
// crash, or to fill a new index. It returns how many episodes it indexed.
func (m *Memory) Reindex(ctx context.Context) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sessions, err := m.sessions(ctx, 0)
	if err != nil {
		return 0, err
	}
	for i, s := range sessions {
		if err := m.reindex(ctx, s); err != nil {
			return i, err
		}
	}
	return len(sessions), nil
}

// Recall returns the k episodes of the scope most relevant to query, best
// first. The recall index ranks every step, summary and metadata document
// of every episode, the current one included. An episode ranks by its best
// document.
func (m *Memory) Recall(ctx context.Context, query string, k int) ([]Hit, error) {
	if k < 1 {
		return nil, &agentmem.InvalidError{Field: "k", Reason: "must be at least 1"}
	}
	if len(recall.Tokenize(query)) == 0 {
		return nil, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	hits, err := m.idx.search(ctx, query, k)
	if err != nil {
		return nil, err
	}
	out := make([]Hit, 0, len(hits))
	for _, h := range hits {
		ep, err := m.get(ctx, h.session)
		if errors.Is(err, agentmem.ErrNotFound) {
			continue // deleted since it was indexed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Hit{Episode: *ep, Matches: h.matches})
	}
	return out, nil
}

// Get returns an episode of the scope by ID; another scope's episode, or a
// session that is not an episode, is ErrNotFound.
func (m *Memory) Get(ctx context.Context, id string) (*Episode, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.get(ctx, id)
}

func (m *Memory) get(ctx context.Context, id string) (*Episode, error) {
	s, err := m.opts.Store.Get(ctx, m.opts.Tenant, id)
	if err != nil {
		return nil, err
	}
	if !m.inScope(s) {
		return nil, fmt.Errorf("episodic: episode %q: %w", id, agentmem.ErrNotFound)
	}
	return m.load(ctx, s)
}

// inScope reports whether a session is an episode of this scope.
func (m *Memory) inScope(s *store.Session) bool {
	return s.Metadata[metaPattern] == "episode" && s.Tenant == m.opts.Tenant &&
		(m.opts.UserID == "" || s.UserID == m.opts.UserID) && (m.opts.Agent == "" || s.Agent == m.opts.Agent)
}

// load reads an episode's summary, if it has ended.
func (m *Memory) load(ctx context.Context, s *store.Session) (*Episode, error) {
	ep, err := episodeOf(s)
	if err != nil {
		return nil, err
	}
	if s.LastSeq == 0 {
		return ep, nil
	}
	resp, err := m.opts.Store.Read(ctx, store.ReadRequest{Tenant: s.Tenant, SessionID: s.ID, Last: 1})
	if err != nil {
		return nil, err
	}
	if n := len(resp.Entries); n > 0 {
		if sum, ok := resp.Entries[n-1].Step.(*agentmem.SummaryStep); ok && sum.Metadata[metaEnd] == "summary" {
			ep.Ended, ep.Summary, ep.Covers = sum.Time, sum.Summary, sum.Covers
		}
	}
	return ep, nil
}

// episodeOf reads an episode's header from its session, refusing a session
// whose marks are malformed with an *agentmem.InvalidError.
func episodeOf(s *store.Session) (*Episode, error) {
	if s.Metadata[metaPattern] != "episode" {
		return nil, &agentmem.InvalidError{Field: metaPattern, Reason: fmt.Sprintf("session %q is not an episode", s.ID)}
	}
	started, err := time.Parse(time.RFC3339Nano, s.Metadata[metaStarted])
	if err != nil {
		return nil, &agentmem.InvalidError{Field: metaStarted, Reason: fmt.Sprintf("%q is not an RFC 3339 time", s.Metadata[metaStarted])}
	}
	ep := &Episode{ID: s.ID, Tenant: s.Tenant, UserID: s.UserID, Agent: s.Agent, Started: started}
	for k, v := range s.Metadata {
		if !strings.HasPrefix(k, ReservedPrefix) {
			if ep.Metadata == nil {
				ep.Metadata = map[string]string{}
			}
			ep.Metadata[k] = v
		}
	}
	return ep, nil
}

// List returns the scope's episodes, newest first, with their summaries.
func (m *Memory) List(ctx context.Context) ([]Episode, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.list(ctx, 0)
}

// list returns up to limit (0: all) episodes, newest first.
func (m *Memory) list(ctx context.Context, limit int) ([]Episode, error) {
	sessions, err := m.sessions(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Episode, 0, len(sessions))
	for _, s := range sessions {
		ep, err := m.load(ctx, s)
		if err != nil {
			return nil, err
		}
		out = append(out, *ep)
	}
	return out, nil
}

// sessions returns up to limit (0: all) episode sessions of the scope,
// newest first by start time.
func (m *Memory) sessions(ctx context.Context, limit int) ([]*store.Session, error) {
	var out []*store.Session
	req := store.ListRequest{Tenant: m.opts.Tenant, ExactTenant: true, UserID: m.opts.UserID, Agent: m.opts.Agent, PageSize: store.MaxPageSize}
	for {
		resp, err := m.opts.Store.List(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, s := range resp.Sessions {
			if m.inScope(s) {
				out = append(out, s)
			}
		}
		if resp.NextPageToken == "" {
			break
		}
		req.PageToken = resp.NextPageToken
	}
	// The store orders by its own clock; episodes order by their start.
	slices.SortStableFunc(out, func(a, b *store.Session) int {
		return strings.Compare(b.Metadata[metaStarted], a.Metadata[metaStarted])
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
