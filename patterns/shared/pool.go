package shared

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/patterns/internal/compose"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/tokenizer"
)

// Defaults of Options.
const (
	DefaultSubscriberBuffer = 64
	DefaultSharedK          = 10
	DefaultSharedShare      = 0.3
)

// MaxTextBytes bounds the text of an entry.
const MaxTextBytes = 64 << 10

const sharedHeader = "Shared memory (from other agents; cite the author when you use it):"

// Options configures a Pool. The zero value works: an in-memory store and
// index, the system clock, o200k_base counts.
type Options struct {
	// Tenant owns the pool's session and documents.
	Tenant string
	// Name names the pool; its session is "pool.<name>". Empty means
	// "default".
	Name string
	// Store keeps the pool's log; nil means a new in-memory store, closed
	// by Close.
	Store *store.Store
	// Index ranks entries for Search and Context; nil means a new
	// in-memory index, closed by Close.
	Index *recall.Index
	// Clock gives entry times; nil means time.Now.
	Clock func() time.Time
	// Counter counts Context tokens when no own memory is given (an own
	// memory's counter is used otherwise); nil means o200k_base.
	Counter tokenizer.Counter
	// SubscriberBuffer is each subscription's buffer; 0 means
	// DefaultSubscriberBuffer.
	SubscriberBuffer int
	// SharedK is how many relevant entries Context considers; 0 means
	// DefaultSharedK.
	SharedK int
	// SharedShare is the largest share of a Context budget the shared
	// entries may take; 0 means DefaultSharedShare.
	SharedShare float64
	// Agents holds the members' own memories, into which BroadcastMessage
	// delivers; the memory of member m is Agents.Memory(ctx, m). Nil means
	// the pool has none, and BroadcastMessage is refused.
	Agents *store.Agents
}

// Pool is memory shared by agents. It is safe for concurrent use.
type Pool struct {
	opts    Options
	session string
	idx     entryIndex
	counter tokenizer.Counter
	owned   []func() error

	writeMu sync.Mutex // serializes appends and syncs

	mu      sync.RWMutex
	entries []*Entry // in Seq order
	byID    map[string]*Entry
	lastSeq int64
	members map[string]map[string]bool // agent → teams
	subs    map[*Subscription]struct{}
}

// Open opens a pool, creating its session (persistent) if needed, and
// loads its entries.
func Open(ctx context.Context, opts Options) (*Pool, error) {
	if opts.Name == "" {
		opts.Name = "default"
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.SubscriberBuffer <= 0 {
		opts.SubscriberBuffer = DefaultSubscriberBuffer
	}
	if opts.SharedK <= 0 {
		opts.SharedK = DefaultSharedK
	}
	if opts.SharedShare == 0 {
		opts.SharedShare = DefaultSharedShare
	}
	if math.IsNaN(opts.SharedShare) || opts.SharedShare < 0 || opts.SharedShare > 1 {
		return nil, &agentmem.InvalidError{Field: "shared_share", Reason: fmt.Sprintf("%v is not in [0, 1]", opts.SharedShare)}
	}
	p := &Pool{opts: opts, session: "pool." + opts.Name, byID: map[string]*Entry{},
		members: map[string]map[string]bool{}, subs: map[*Subscription]struct{}{}}
	if err := store.ValidateID(p.session); err != nil {
		return nil, &agentmem.InvalidError{Field: "name", Reason: fmt.Sprintf("%q does not make a session ID", opts.Name)}
	}
	p.counter = opts.Counter
	if p.counter == nil {
		p.counter = tokenizer.Default()
	}
	if p.opts.Store == nil {
		st := memstore.New(memstore.Options{Clock: opts.Clock})
		p.opts.Store = st
		p.owned = append(p.owned, st.Close)
	}
	if p.opts.Index == nil {
		ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
		p.opts.Index = ix
		p.owned = append(p.owned, ix.Close)
	}
	p.idx = entryIndex{ix: p.opts.Index, tenant: opts.Tenant, pool: p.session}
	_, err := p.opts.Store.Create(ctx, store.CreateRequest{ID: p.session, Tenant: opts.Tenant, Retention: store.Persistent,
		Metadata: map[string]string{"agentmem.pattern": "shared"}})
	if err != nil && !errors.Is(err, agentmem.ErrConflict) {
		return nil, errors.Join(err, p.closeOwned())
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if err := p.sync(ctx, false); err != nil {
		return nil, errors.Join(err, p.closeOwned())
	}
	return p, nil
}

// Close cancels every subscription and closes what Open created; a store
// and index passed in stay open.
func (p *Pool) Close() error {
	p.mu.Lock()
	for s := range p.subs {
		p.cancelLocked(s)
	}
	p.mu.Unlock()
	return p.closeOwned()
}

func (p *Pool) closeOwned() error {
	var errs []error
	for _, c := range p.owned {
		errs = append(errs, c())
	}
	p.owned = nil
	return errors.Join(errs...)
}

// Join makes an agent a member of the pool and of the given teams (in
// addition to the teams it already joined).
func (p *Pool) Join(agentID string, teams ...string) error {
	if err := checkName("agent", agentID); err != nil {
		return err
	}
	for _, t := range teams {
		if err := checkName("team", t); err != nil {
			return err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.members[agentID]
	if m == nil {
		m = map[string]bool{}
		p.members[agentID] = m
	}
	for _, t := range teams {
		m[t] = true
	}
	return nil
}

// Leave removes an agent from the pool and cancels its subscriptions. Its
// entries stay.
func (p *Pool) Leave(agentID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.members, agentID)
	for s := range p.subs {
		if s.agent == agentID {
			p.cancelLocked(s)
		}
	}
}

// Members returns the members and their teams, sorted.
func (p *Pool) Members() map[string][]string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make(map[string][]string, len(p.members))
	for a, teams := range p.members {
		ts := make([]string, 0, len(teams))
		for t := range teams {
			ts = append(ts, t)
		}
		slices.Sort(ts)
		out[a] = ts
	}
	return out
}

// canRead reports whether agent may read e. The caller holds p.mu.
func (p *Pool) canRead(agent string, e *Entry) bool {
	teams, ok := p.members[agent]
	if !ok {
		return false
	}
	switch e.Scope.Kind {
	case ScopeGlobal:
		return true
	case ScopeTeam:
		return teams[e.Scope.Team]
	}
	return e.Author == agent
}

// member returns an error wrapping ErrNotFound for an agent that has not
// joined. The caller holds p.mu.
func (p *Pool) member(agent string) error {
	if _, ok := p.members[agent]; !ok {
		return fmt.Errorf("shared: agent %q has not joined pool %q: %w", agent, p.opts.Name, agentmem.ErrNotFound)
	}
	return nil
}

// Share adds an insight by agent from, readable in scope, and broadcasts
// it. The author must have joined, and be a member of a team scope's team.
// prov.Agent is set to from; a zero prov.Time means now.
func (p *Pool) Share(ctx context.Context, from, insight string, scope Scope, prov Provenance) (Entry, error) {
	return p.add(ctx, Insight, from, insight, scope, prov)
}

// RegisterFact adds a fact, as Share adds an insight, except that a fact
// is kept once per scope. Registering the same text (up to case and
// spacing) in the same scope again, by any agent, broadcasts nothing. It
// returns the entry of the first registration, with its provenance.
func (p *Pool) RegisterFact(ctx context.Context, from, fact string, scope Scope, prov Provenance) (Entry, error) {
	return p.add(ctx, Fact, from, fact, scope, prov)
}

func (p *Pool) add(ctx context.Context, kind Kind, from, text string, scope Scope, prov Provenance) (Entry, error) {
	if err := checkName("from", from); err != nil {
		return Entry{}, err
	}
	if err := scope.validate(); err != nil {
		return Entry{}, err
	}
	switch {
	case strings.TrimSpace(text) == "":
		return Entry{}, &agentmem.InvalidError{Field: "text", Reason: "is empty"}
	case !utf8.ValidString(text) || strings.ContainsRune(text, 0):
		return Entry{}, &agentmem.InvalidError{Field: "text", Reason: "is not valid UTF-8 text"}
	case len(text) > MaxTextBytes:
		return Entry{}, &agentmem.InvalidError{Field: "text", Reason: fmt.Sprintf("is %d bytes (at most %d)", len(text), MaxTextBytes)}
	}
	p.mu.RLock()
	err := p.member(from)
	if err == nil && scope.Kind == ScopeTeam && !p.members[from][scope.Team] {
		err = &agentmem.InvalidError{Field: "scope.team", Reason: fmt.Sprintf("agent %q is not a member of team %q", from, scope.Team)}
	}
	p.mu.RUnlock()
	if err != nil {
		return Entry{}, err
	}

	now := p.opts.Clock().UTC()
	prov.Agent = from
	e := &Entry{Kind: kind, Text: text, Author: from, Scope: scope, Provenance: prov, Time: now}
	if kind == Fact {
		e.ID = factID(from, scope, text)
	} else {
		e.ID = agentmem.NewID()
	}

	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	_, err = p.opts.Store.Append(ctx, store.AppendRequest{Tenant: p.opts.Tenant, SessionID: p.session, Steps: []agentmem.Step{entryStep(e)}})
	if kind == Fact && errors.Is(err, store.ErrIDReused) {
		// The fact is registered already (by another author, or in
		// other words): the stored entry stands and is returned.
		err = nil
	}
	if err != nil {
		return Entry{}, fmt.Errorf("shared: append to pool %q: %w", p.opts.Name, err)
	}
	if err := p.sync(ctx, true); err != nil {
		return Entry{}, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	got, ok := p.byID[e.ID]
	if !ok {
		return Entry{}, fmt.Errorf("shared: entry %s appended but not read back: %w", e.ID, agentmem.ErrNotFound)
	}
	return *got, nil
}

// MetaPoolEntry, MetaShared and MetaSource are the metadata keys
// BroadcastMessage sets on the message it delivers. They hold the pool
// entry that records it, "true", and the sender.
const (
	MetaPoolEntry = "agentmem.pool_entry"
	MetaShared    = "shared"
	MetaSource    = "source"
)

// BroadcastMessage is the seeds' broadcast_message. It delivers msg into
// the own memory (Options.Agents) of every member of the pool, the sender
// included, in the order of their names. It records msg in the pool as a
// global insight, so subscribers are told and Search finds it. Each
// delivered copy is msg with metadata MetaShared "true", MetaSource from
// and MetaPoolEntry the entry's ID, and an ID of its own
// ("<entry>.<agent>").
//
// msg must be a user, assistant or system message with text and without
// tool calls; a tool message would need its call in each memory. from must
// have joined. Delivery goes on past a member whose memory refuses it. The
// error then names every member that did not get it (each wrapped), and
// the entry is returned with it. Errors: agentmem.ErrInvalid for a bad
// message or a pool without Options.Agents, ErrNotFound for a sender that
// has not joined.
func (p *Pool) BroadcastMessage(ctx context.Context, from string, msg agentmem.Message) (Entry, error) {
	if p.opts.Agents == nil {
		return Entry{}, &agentmem.InvalidError{Field: "options.agents", Reason: "is nil: the pool has no agent memories to deliver into"}
	}
	switch {
	case msg.Role != agentmem.RoleUser && msg.Role != agentmem.RoleAssistant && msg.Role != agentmem.RoleSystem:
		return Entry{}, &agentmem.InvalidError{Field: "message.role", Reason: fmt.Sprintf("%q cannot be broadcast (user, assistant or system)", msg.Role)}
	case len(msg.ToolCalls) > 0:
		return Entry{}, &agentmem.InvalidError{Field: "message.tool_calls", Reason: "a broadcast message cannot call tools"}
	}
	if err := msg.Validate(); err != nil {
		return Entry{}, err
	}
	e, err := p.add(ctx, Insight, from, msg.Text(), Global(), Provenance{})
	if err != nil {
		return Entry{}, err
	}
	members := p.Members()
	names := make([]string, 0, len(members))
	for m := range members {
		names = append(names, m)
	}
	slices.Sort(names)
	var errs []error
	for _, agent := range names {
		if err := p.deliver(ctx, agent, from, e, msg); err != nil {
			errs = append(errs, fmt.Errorf("shared: broadcast %s to agent %q: %w", e.ID, agent, err))
		}
	}
	return e, errors.Join(errs...)
}

// deliver adds a broadcast message to one member's memory.
func (p *Pool) deliver(ctx context.Context, agent, from string, e Entry, msg agentmem.Message) error {
	mem, err := p.opts.Agents.Memory(ctx, agent)
	if err != nil {
		return err
	}
	m := msg.Clone()
	m.ID = e.ID + "." + agent
	if m.Metadata == nil {
		m.Metadata = map[string]string{}
	}
	m.Metadata[MetaShared] = "true"
	m.Metadata[MetaSource] = from
	m.Metadata[MetaPoolEntry] = e.ID
	if m.Time.IsZero() {
		m.Time = e.Time
	}
	return mem.AddMessage(ctx, m)
}

// Sync reads the entries other processes appended to the pool's log since
// the last read, indexes and broadcasts them, and returns how many there
// were. Writes through this Pool sync by themselves. A process that shares
// a pool with others through one database calls Sync to see theirs, for
// example on a ticker.
func (p *Pool) Sync(ctx context.Context) (int, error) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	before := p.lastSeq
	err := p.sync(ctx, true)
	p.mu.RLock()
	n := 0
	for i := len(p.entries) - 1; i >= 0 && p.entries[i].Seq > before; i-- {
		n++
	}
	p.mu.RUnlock()
	return n, err
}

// sync applies the log's entries after lastSeq. The caller holds writeMu.
// A step that is not a pool entry is skipped and reported; the others are
// applied regardless.
func (p *Pool) sync(ctx context.Context, index bool) error {
	resp, err := p.opts.Store.Read(ctx, store.ReadRequest{Tenant: p.opts.Tenant, SessionID: p.session, After: p.lastSeq})
	if err != nil {
		return fmt.Errorf("shared: read pool %q: %w", p.opts.Name, err)
	}
	var fresh []*Entry
	var errs []error
	last := p.lastSeq
	for _, le := range resp.Entries {
		last = max(last, le.Seq)
		if le.Kind != store.StepEntry {
			continue
		}
		e, err := entryFromStep(le.Seq, le.Step)
		if err != nil {
			errs = append(errs, fmt.Errorf("shared: pool %q entry %d: %w", p.opts.Name, le.Seq, err))
			continue
		}
		fresh = append(fresh, e)
	}
	if index {
		if err := p.idx.put(ctx, fresh...); err != nil {
			errs = append(errs, fmt.Errorf("shared: index pool %q (Reindex repairs it): %w", p.opts.Name, err))
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastSeq = last
	for _, e := range fresh {
		p.entries = append(p.entries, e)
		p.byID[e.ID] = e
		p.broadcastLocked(e)
	}
	return errors.Join(errs...)
}

// Reindex writes every entry to the recall index again (idempotent). Use
// it after a crash between an append and its indexing, or to fill a new
// index.
func (p *Pool) Reindex(ctx context.Context) (int, error) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.mu.RLock()
	all := slices.Clone(p.entries)
	p.mu.RUnlock()
	const batch = 500
	for i := 0; i < len(all); i += batch {
		if err := p.idx.put(ctx, all[i:min(i+batch, len(all))]...); err != nil {
			return i, err
		}
	}
	return len(all), nil
}

// Entries returns the entries agentID may read with Seq > after, in order.
func (p *Pool) Entries(agentID string, after int64) ([]Entry, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if err := p.member(agentID); err != nil {
		return nil, err
	}
	i, _ := slices.BinarySearchFunc(p.entries, after+1, func(e *Entry, seq int64) int { return cmpInt(e.Seq, seq) })
	var out []Entry
	for _, e := range p.entries[i:] {
		if p.canRead(agentID, e) {
			out = append(out, *e)
		}
	}
	return out, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Search returns the k entries agentID may read that are most relevant to
// query, best first, ranked by the recall index over the whole pool. The
// index is asked for more candidates until k readable ones are found or
// the pool is exhausted. So entries the agent may not read never crowd out
// those it may.
func (p *Pool) Search(ctx context.Context, agentID, query string, k int) ([]Entry, error) {
	if k < 1 {
		return nil, &agentmem.InvalidError{Field: "k", Reason: "must be at least 1"}
	}
	p.mu.RLock()
	err := p.member(agentID)
	total := len(p.entries)
	p.mu.RUnlock()
	if err != nil || total == 0 || len(recall.Tokenize(query)) == 0 {
		return nil, err
	}
	want := min(4*k, total)
	for {
		ids, err := p.idx.search(ctx, query, want)
		if err != nil {
			return nil, err
		}
		var out []Entry
		p.mu.RLock()
		for _, id := range ids {
			if e, ok := p.byID[id]; ok && p.canRead(agentID, e) {
				out = append(out, *e)
				if len(out) == k {
					break
				}
			}
		}
		p.mu.RUnlock()
		if len(out) == k || len(ids) < want || want >= total {
			return out, nil
		}
		want = min(4*want, total)
	}
}

// Subscription delivers the new entries of a pool that one agent may read.
type Subscription struct {
	agent   string
	c       chan Entry
	dropped atomic.Uint64
	pool    *Pool
}

// C returns the channel of entries, in the pool's order. It is closed when
// the subscription is cancelled (Cancel, Leave or Close).
func (s *Subscription) C() <-chan Entry { return s.c }

// Dropped counts the entries dropped because the buffer was full.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Cancel ends the subscription and closes its channel; calling it again
// does nothing.
func (s *Subscription) Cancel() {
	s.pool.mu.Lock()
	defer s.pool.mu.Unlock()
	s.pool.cancelLocked(s)
}

func (p *Pool) cancelLocked(s *Subscription) {
	if _, ok := p.subs[s]; ok {
		delete(p.subs, s)
		close(s.c)
	}
}

// Subscribe subscribes agentID, who must have joined, to the new entries
// it may read, its own included. Delivery never blocks a writer. An entry
// that finds the subscription's buffer (Options.SubscriberBuffer) full is
// dropped for this subscriber and counted in Dropped; Entries(agentID,
// seq) catches up.
func (p *Pool) Subscribe(agentID string) (*Subscription, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.member(agentID); err != nil {
		return nil, err
	}
	s := &Subscription{agent: agentID, c: make(chan Entry, p.opts.SubscriberBuffer), pool: p}
	p.subs[s] = struct{}{}
	return s, nil
}

// broadcastLocked offers e to every subscriber that may read it. The
// caller holds p.mu for writing, so a channel is never closed during a send
// and every subscriber sees the pool's order.
func (p *Pool) broadcastLocked(e *Entry) {
	for s := range p.subs {
		if !p.canRead(s.agent, e) {
			continue
		}
		select {
		case s.c <- *e:
		default:
			s.dropped.Add(1)
		}
	}
}

// AgentContext is an agent's context: shared entries and its own memory.
type AgentContext struct {
	// Messages are the own memory's leading system messages, then the shared
	// block (one system message, left out when empty), then the rest of the
	// own context.
	Messages []agentmem.Message `json:"messages"`
	// Tokens is what Messages cost, reply priming included; it never
	// exceeds Budget.
	Tokens int `json:"tokens"`
	Budget int `json:"budget,omitempty"`
	// Shared lists the entries shown, most relevant first; SharedTokens
	// is what their block costs.
	Shared       []Entry `json:"shared,omitempty"`
	SharedTokens int     `json:"shared_tokens"`
	// Own is the own memory's context (nil without one).
	Own *agentmem.Context `json:"own,omitempty"`
}

// Context renders agentID's context within budget tokens (zero or less: no
// limit). It holds the shared entries it may read that are most relevant
// to query, within Options.SharedShare of the budget. When the query has
// no searchable word, they are the newest. own's context fills the rest.
// Counts are exact, with own's counter. own may be nil. If own's pinned
// steps alone exceed the budget the error is an *agentmem.BudgetError.
func (p *Pool) Context(ctx context.Context, agentID, query string, own *agentmem.Memory, budget int) (*AgentContext, error) {
	c := p.counter
	reserved := agentmem.ReplyPriming
	if own != nil {
		c = own.Counter()
		reserved = compose.PinnedCost(own)
	}
	if budget > 0 && reserved > budget {
		return nil, &agentmem.BudgetError{Budget: budget, Required: reserved}
	}
	var entries []Entry
	var err error
	if len(recall.Tokenize(query)) > 0 {
		entries, err = p.Search(ctx, agentID, query, p.opts.SharedK)
	} else {
		entries, err = p.Entries(agentID, 0)
		slices.Reverse(entries)
		entries = entries[:min(len(entries), p.opts.SharedK)]
	}
	if err != nil {
		return nil, err
	}
	share := math.MaxInt / 4
	if budget > 0 {
		share = min(int(p.opts.SharedShare*float64(budget)), budget-reserved)
	}
	lines := make([]string, len(entries))
	for i := range entries {
		lines[i] = entries[i].line()
	}
	block := compose.Fit(c, sharedHeader, lines, share)
	out := &AgentContext{Budget: budget, Shared: entries[:block.Kept], SharedTokens: block.Tokens}
	if own == nil {
		out.Messages = compose.Insert(nil, block)
		out.Tokens = agentmem.ReplyPriming + block.Tokens
		return out, nil
	}
	ownBudget := 0
	if budget > 0 {
		ownBudget = budget - block.Tokens
	}
	oc, err := own.Context(ctx, agentmem.ContextOptions{Budget: ownBudget})
	if err != nil {
		return nil, err
	}
	out.Own = oc
	out.Messages = compose.Insert(oc.Messages, block)
	out.Tokens = oc.Tokens + block.Tokens
	return out, nil
}
