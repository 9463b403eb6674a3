package hierarchy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/patterns/internal/compose"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/summarize"
	"github.com/agentmem/agentmem/tokenizer"
	"github.com/agentmem/agentmem/views/recallview"
)

// Defaults of Options.
const (
	DefaultCoreThreshold       = 0.7
	DefaultWorkingMaxSteps     = 20
	DefaultPromoteAfterRecalls = 3
	DefaultSummaryTokens       = 300
	DefaultEpisodicK           = 5
	DefaultEpisodicShare       = 0.25
)

// MetaImportance is the step metadata key under which Add records a step's
// importance in the session's log.
const MetaImportance = "importance"

// Headers of the context blocks.
const (
	coreHeader     = "Core memory (always true, keep in mind):"
	episodicHeader = "Earlier in this run (recalled summaries):"
)

// Options configures a Memory. The zero value works: an in-memory store
// and recall index, a new session, the extractive summarizer, and the
// defaults above.
type Options struct {
	// Tenant owns the session and the index documents.
	Tenant string
	// SessionID is the store session that holds the working tier. Open
	// resumes it if it exists and creates it (persistent) if not; empty
	// means a new session with a new ID.
	SessionID string
	// Store holds the working tier; nil means a new in-memory store,
	// closed by Close.
	Store *store.Store
	// Index holds the core and episodic tiers; nil means a new in-memory
	// index, closed by Close.
	Index *recall.Index
	// Memory configures the working tier's agentmem.Memory (format,
	// counter, clock, IDs). Journal must be nil and Policy should be: the
	// hierarchy does the working tier's compaction itself.
	Memory agentmem.Options
	// Summarizer writes the episodic chunks; nil means
	// summarize.Extractive with the memory's counter.
	Summarizer agentmem.Summarizer
	// CoreThreshold is the importance at or above which an entry is
	// core; 0 means DefaultCoreThreshold.
	CoreThreshold float64
	// CoreMaxItems and CoreMaxTokens bound the core tier (its rendered
	// block, counted exactly); past them the least important entry is
	// demoted to the episodic tier. Zero means no bound.
	CoreMaxItems  int
	CoreMaxTokens int
	// WorkingMaxSteps and WorkingMaxTokens bound the working tier's
	// unpinned steps (count) and its whole rendering (tokens). Past them
	// the oldest unpinned steps are summarized into an episodic chunk.
	// WorkingMaxSteps 0 means DefaultWorkingMaxSteps, negative no bound;
	// WorkingMaxTokens 0 means no bound.
	WorkingMaxSteps  int
	WorkingMaxTokens int
	// DemoteBatch is the least number of steps one demotion summarizes;
	// 0 means half of WorkingMaxSteps (at least 1).
	DemoteBatch int
	// PromoteAfterRecalls is how many recalls promote an episodic entry to
	// the core tier; 0 means DefaultPromoteAfterRecalls, negative never.
	PromoteAfterRecalls int
	// SummaryTokens bounds a chunk's summary; 0 means DefaultSummaryTokens.
	SummaryTokens int
	// EpisodicK is how many episodic entries Context searches for; 0 means
	// DefaultEpisodicK.
	EpisodicK int
	// EpisodicShare is the largest share of a Context budget the episodic
	// block may take; 0 means DefaultEpisodicShare.
	EpisodicShare float64
}

// Memory is a hierarchical memory: core, working and episodic tiers over
// one store session and a recall index. It is safe for concurrent use.
type Memory struct {
	mu       sync.Mutex
	opts     Options
	working  *store.Bound
	idx      tierIndex
	counter  tokenizer.Counter
	env      *agentmem.Env
	core     map[string]*Item
	episodic map[string]*Item
	owned    []func() error
}

// Open opens the hierarchical memory of a session: the working tier from
// the session's working set, the core and episodic tiers from the index.
func Open(ctx context.Context, opts Options) (*Memory, error) {
	if err := opts.resolve(); err != nil {
		return nil, err
	}
	m := &Memory{opts: opts, core: map[string]*Item{}, episodic: map[string]*Item{}}
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
	if err := m.openWorking(ctx); err != nil {
		m.closeOwned()
		return nil, err
	}
	m.counter = m.working.Counter()
	m.env = agentmem.NewEnv(agentmem.EnvOptions{Counter: m.counter, Format: m.working.Format()})
	if m.opts.Summarizer == nil {
		m.opts.Summarizer = summarize.Extractive{Counter: m.counter}
	}
	m.idx = tierIndex{ix: m.opts.Index, tenant: opts.Tenant, session: m.working.Session().ID}
	if err := m.load(ctx); err != nil {
		m.closeOwned()
		return nil, err
	}
	return m, nil
}

func (o *Options) resolve() error {
	if o.CoreThreshold == 0 {
		o.CoreThreshold = DefaultCoreThreshold
	}
	if err := checkImportance(o.CoreThreshold); err != nil {
		return &agentmem.InvalidError{Field: "core_threshold", Reason: err.(*agentmem.InvalidError).Reason}
	}
	if o.WorkingMaxSteps == 0 {
		o.WorkingMaxSteps = DefaultWorkingMaxSteps
	}
	if o.DemoteBatch <= 0 {
		o.DemoteBatch = max(1, o.WorkingMaxSteps/2)
	}
	if o.PromoteAfterRecalls == 0 {
		o.PromoteAfterRecalls = DefaultPromoteAfterRecalls
	}
	if o.SummaryTokens <= 0 {
		o.SummaryTokens = DefaultSummaryTokens
	}
	if o.EpisodicK <= 0 {
		o.EpisodicK = DefaultEpisodicK
	}
	if o.EpisodicShare == 0 {
		o.EpisodicShare = DefaultEpisodicShare
	}
	if math.IsNaN(o.EpisodicShare) || o.EpisodicShare < 0 || o.EpisodicShare > 1 {
		return &agentmem.InvalidError{Field: "episodic_share", Reason: fmt.Sprintf("%v is not in [0, 1]", o.EpisodicShare)}
	}
	if o.Memory.Journal != nil {
		return &agentmem.InvalidError{Field: "memory.journal", Reason: "must be nil: the working tier journals to its session"}
	}
	return nil
}

// openWorking resumes or creates the session of the working tier.
func (m *Memory) openWorking(ctx context.Context) error {
	var err error
	if m.opts.SessionID != "" {
		m.working, err = store.OpenTenantMemory(ctx, m.opts.Store, m.opts.Tenant, m.opts.SessionID, m.opts.Memory)
		if !errors.Is(err, agentmem.ErrNotFound) {
			return err
		}
	}
	m.working, err = store.CreateMemory(ctx, m.opts.Store, store.CreateRequest{
		ID:        m.opts.SessionID,
		Tenant:    m.opts.Tenant,
		Retention: store.Persistent,
		Metadata:  map[string]string{"agentmem.pattern": "hierarchy"},
	}, m.opts.Memory)
	return err
}

// load reads the core and episodic tiers from the index. An entry found in
// both (a move interrupted by a crash) is core.
func (m *Memory) load(ctx context.Context) error {
	for _, t := range []Tier{Core, Episodic} {
		items, err := m.idx.load(ctx, t)
		if err != nil {
			return err
		}
		for _, it := range items {
			m.tier(t)[it.ID] = it
		}
	}
	for id := range m.core {
		if _, ok := m.episodic[id]; ok {
			delete(m.episodic, id)
			if err := m.idx.remove(ctx, Episodic, id); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *Memory) tier(t Tier) map[string]*Item {
	if t == Core {
		return m.core
	}
	return m.episodic
}

// SessionID returns the ID of the session that holds the working tier:
// pass it as Options.SessionID to resume.
func (m *Memory) SessionID() string { return m.idx.session }

// Working returns the working tier's memory, for reading (Steps, Context,
// Visualize). Add steps through Memory.Add, which keeps the tiers in
// balance; steps added to it directly are balanced on the next Add.
func (m *Memory) Working() *store.Bound { return m.working }

// Close closes the working tier's session binding and what Open created
// (the in-memory store and index); a store and index passed in stay open.
func (m *Memory) Close(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	err := m.working.Close(ctx)
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

// Add adds a step to the working tier with an importance in [0, 1],
// recorded in the step's metadata (MetaImportance). A step at or above the
// core threshold also joins the core tier. Then the tiers are balanced:
// an overflowing working tier demotes its oldest steps to the episodic
// tier, an overflowing core tier its least important entry.
//
// The add is durable once the step is in the session's log; an error
// from balancing is returned with the step's header and the step stays.
func (m *Memory) Add(ctx context.Context, s agentmem.Step, importance float64) (agentmem.StepInfo, error) {
	if err := checkImportance(importance); err != nil {
		return agentmem.StepInfo{}, err
	}
	if s == nil {
		return agentmem.StepInfo{}, &agentmem.InvalidError{Field: "step", Reason: "is nil"}
	}
	info := s.Info()
	md := make(map[string]string, len(info.Metadata)+1)
	for k, v := range info.Metadata {
		md[k] = v
	}
	md[MetaImportance] = formatImportance(importance)
	info.Metadata = md

	m.mu.Lock()
	defer m.mu.Unlock()
	got, err := m.working.Add(ctx, agentmem.WithInfo(s, info))
	if err != nil {
		return got, err
	}
	if importance >= m.opts.CoreThreshold {
		if err := m.coreFromStep(ctx, got.Number, importance); err != nil {
			return got, err
		}
	}
	return got, m.balance(ctx)
}

// coreFromStep makes the working step numbered n a core entry.
func (m *Memory) coreFromStep(ctx context.Context, n int, importance float64) error {
	st, ok := m.working.Step(n)
	if !ok {
		return nil
	}
	text := m.stepText(st)
	if text == "" {
		return nil // a system prompt: pinned in the working tier anyway
	}
	info := st.Info()
	it := &Item{ID: info.ID, Tier: Core, Text: text, Importance: importance,
		Covers: []agentmem.Range{{From: n, To: n}}, Time: info.Time}
	if err := m.idx.put(ctx, it); err != nil {
		return err
	}
	m.core[it.ID] = it
	return nil
}

// stepText is what recall would index of the step: the text a core entry
// or a search shows.
func (m *Memory) stepText(s agentmem.Step) string {
	info := s.Info()
	docs := recallview.StepDocs(m.working.Session(), store.Entry{Seq: int64(info.Number), Kind: store.StepEntry, Step: s, Time: info.Time})
	if len(docs) == 0 {
		return ""
	}
	return docs[0].Text
}

// balance demotes from the working tier, then from the core tier, until
// both are within their bounds.
func (m *Memory) balance(ctx context.Context) error {
	if err := m.demoteWorking(ctx); err != nil {
		return err
	}
	return m.enforceCore(ctx)
}

// demoteWorking summarizes the oldest unpinned steps of an overflowing
// working tier into episodic chunks and compacts them out of it.
func (m *Memory) demoteWorking(ctx context.Context) error {
	for {
		steps := m.working.Steps()
		pinned := agentmem.PinnedFlags(steps)
		var unpinned []agentmem.Step
		for i, s := range steps {
			if !pinned[i] {
				unpinned = append(unpinned, s)
			}
		}
		n := 0
		if limit := m.opts.WorkingMaxSteps; limit > 0 && len(unpinned) > limit {
			n = max(m.opts.DemoteBatch, len(unpinned)-limit)
		}
		if limit := m.opts.WorkingMaxTokens; limit > 0 {
			total := m.working.Tokens()
			if total > limit {
				k := 0
				for k < len(unpinned) && total > limit {
					total -= m.env.Tokens(unpinned[k])
					k++
				}
				n = max(n, k, min(m.opts.DemoteBatch, len(unpinned)))
			}
		}
		n = min(n, len(unpinned))
		if n == 0 {
			return nil
		}
		if err := m.demoteSteps(ctx, unpinned[:n]); err != nil {
			return err
		}
	}
}

// demoteSteps writes one episodic chunk for batch, then compacts the
// batch out of the working tier. The chunk's ID follows from its first
// step, so a demotion repeated after a crash between the two writes
// replaces the chunk instead of adding a second one.
func (m *Memory) demoteSteps(ctx context.Context, batch []agentmem.Step) error {
	text, covers, err := compose.Summarize(ctx, m.opts.Summarizer, m.counter, batch, m.opts.SummaryTokens)
	if err != nil {
		return fmt.Errorf("hierarchy: summarize %d working steps: %w", len(batch), err)
	}
	if text != "" {
		it := &Item{ID: "chunk-" + strconv.Itoa(covers[0].From), Tier: Episodic, Text: text,
			Covers: covers, Time: batch[len(batch)-1].Info().Time}
		if old, ok := m.episodic[it.ID]; ok {
			it.Recalls, it.Importance = old.Recalls, old.Importance
		}
		if err := m.idx.put(ctx, it); err != nil {
			return err
		}
		m.episodic[it.ID] = it
	}
	drop := make(map[int]bool, len(batch))
	for _, s := range batch {
		drop[s.Info().Number] = true
	}
	_, err = m.working.Prune(ctx, agentmem.StrategyFunc(func(_ context.Context, steps []agentmem.Step, _ *agentmem.Env) ([]agentmem.Step, error) {
		return slices.DeleteFunc(slices.Clone(steps), func(s agentmem.Step) bool { return drop[s.Info().Number] }), nil
	}))
	return err
}

// enforceCore demotes the least important core entries (the oldest among
// equals) while the core tier is over its bounds.
func (m *Memory) enforceCore(ctx context.Context) error {
	for len(m.core) > 0 {
		over := m.opts.CoreMaxItems > 0 && len(m.core) > m.opts.CoreMaxItems
		if !over && m.opts.CoreMaxTokens > 0 {
			over = compose.Fit(m.counter, coreHeader, lines(m.coreItems()), math.MaxInt).Tokens > m.opts.CoreMaxTokens
		}
		if !over {
			return nil
		}
		items := m.coreItems()
		if err := m.demoteCore(ctx, items[len(items)-1], items[len(items)-1].Importance); err != nil {
			return err
		}
	}
	return nil
}

// coreItems returns the core entries, most important first, then newest.
func (m *Memory) coreItems() []*Item {
	items := make([]*Item, 0, len(m.core))
	for _, it := range m.core {
		items = append(items, it)
	}
	slices.SortFunc(items, func(a, b *Item) int {
		return cmp.Or(cmp.Compare(b.Importance, a.Importance), b.Time.Compare(a.Time),
			cmp.Compare(b.first(), a.first()), cmp.Compare(a.ID, b.ID))
	})
	return items
}

// demoteCore takes an entry out of the core tier. A step still in the
// working tier simply leaves the core; the working tier shows it, and
// demotes it in its turn. Anything else goes down to the episodic tier,
// verbatim, with its recall count reset.
func (m *Memory) demoteCore(ctx context.Context, it *Item, importance float64) error {
	if !m.inWorking(it) {
		down := it.clone()
		down.Tier, down.Importance, down.Recalls = Episodic, importance, 0
		if err := m.idx.put(ctx, down); err != nil {
			return err
		}
		m.episodic[down.ID] = down
	}
	if err := m.idx.remove(ctx, Core, it.ID); err != nil {
		return err
	}
	delete(m.core, it.ID)
	return nil
}

// promote moves an episodic entry to the core tier.
func (m *Memory) promote(ctx context.Context, it *Item, importance float64) error {
	up := it.clone()
	up.Tier, up.Importance = Core, max(importance, m.opts.CoreThreshold)
	if err := m.idx.put(ctx, up); err != nil {
		return err
	}
	m.core[up.ID] = up
	if err := m.idx.remove(ctx, Episodic, it.ID); err != nil {
		return err
	}
	delete(m.episodic, it.ID)
	return m.enforceCore(ctx)
}

// inWorking reports whether the item is a single step still in the
// working tier.
func (m *Memory) inWorking(it *Item) bool {
	if len(it.Covers) != 1 || it.Covers[0].From != it.Covers[0].To {
		return false
	}
	s, ok := m.working.Step(it.Covers[0].From)
	return ok && s.Info().ID == it.ID
}

// SetImportance changes the importance of an entry: a core or episodic
// entry by its ID, or a step of the working tier by its step ID. At or
// above the core threshold the entry is promoted to the core tier; below
// it a core entry is demoted. An unknown ID is ErrNotFound.
func (m *Memory) SetImportance(ctx context.Context, id string, importance float64) error {
	if err := checkImportance(importance); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	core := importance >= m.opts.CoreThreshold
	if it, ok := m.core[id]; ok {
		if !core {
			return m.demoteCore(ctx, it, importance)
		}
		up := it.clone()
		up.Importance = importance
		if err := m.idx.put(ctx, up); err != nil {
			return err
		}
		m.core[id] = up
		return m.enforceCore(ctx)
	}
	if it, ok := m.episodic[id]; ok {
		if core {
			return m.promote(ctx, it, importance)
		}
		down := it.clone()
		down.Importance = importance
		if err := m.idx.put(ctx, down); err != nil {
			return err
		}
		m.episodic[id] = down
		return nil
	}
	for _, s := range m.working.Steps() {
		if s.Info().ID != id {
			continue
		}
		if !core {
			return nil // not core, and a working step has no other rank
		}
		if err := m.coreFromStep(ctx, s.Info().Number, importance); err != nil {
			return err
		}
		return m.enforceCore(ctx)
	}
	return fmt.Errorf("hierarchy: entry %q: %w", id, agentmem.ErrNotFound)
}

// Recall returns the k episodic entries most relevant to query, best
// first, as they are after the recall. Each recall counts, and an entry
// recalled Options.PromoteAfterRecalls times is promoted to the core tier
// (its Tier says so).
func (m *Memory) Recall(ctx context.Context, query string, k int) ([]Item, error) {
	if k < 1 {
		return nil, &agentmem.InvalidError{Field: "k", Reason: "must be at least 1"}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	found, err := m.searchEpisodic(ctx, query, k)
	if err != nil {
		return nil, err
	}
	return m.countRecalls(ctx, found)
}

// searchEpisodic returns the episodic entries the index finds for query.
func (m *Memory) searchEpisodic(ctx context.Context, query string, k int) ([]*Item, error) {
	if len(m.episodic) == 0 || len(recall.Tokenize(query)) == 0 {
		return nil, nil
	}
	ids, err := m.idx.search(ctx, query, k)
	if err != nil {
		return nil, err
	}
	var out []*Item
	for _, id := range ids {
		if it, ok := m.episodic[id]; ok {
			out = append(out, it)
		}
	}
	return out, nil
}

// countRecalls records one recall of each item, promoting those that reach
// the threshold, and returns copies of them as they are now.
func (m *Memory) countRecalls(ctx context.Context, items []*Item) ([]Item, error) {
	out := make([]Item, 0, len(items))
	for _, it := range items {
		c := it.clone()
		c.Recalls++
		if p := m.opts.PromoteAfterRecalls; p > 0 && c.Recalls >= p {
			if err := m.promote(ctx, c, c.Importance); err != nil {
				return nil, err
			}
			c.Tier = Core
			c.Importance = max(c.Importance, m.opts.CoreThreshold)
		} else {
			if err := m.idx.put(ctx, c); err != nil {
				return nil, err
			}
			m.episodic[c.ID] = c
		}
		out = append(out, *c.clone())
	}
	return out, nil
}

// Items returns copies of a tier's entries: the core tier most important
// first, the episodic tier in step order. The working tier's steps are
// Working().Steps().
func (m *Memory) Items(t Tier) []Item {
	m.mu.Lock()
	defer m.mu.Unlock()
	var items []*Item
	switch t {
	case Core:
		items = m.coreItems()
	case Episodic:
		for _, it := range m.episodic {
			items = append(items, it)
		}
		slices.SortFunc(items, func(a, b *Item) int { return cmp.Or(cmp.Compare(a.first(), b.first()), cmp.Compare(a.ID, b.ID)) })
	}
	out := make([]Item, len(items))
	for i, it := range items {
		out[i] = *it.clone()
	}
	return out
}

func lines(items []*Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.line()
	}
	return out
}
