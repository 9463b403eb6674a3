package server

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// The session cache keeps, for recently used sessions, an agentmem.Memory
// holding the session's working set, so that a step is rendered and
// counted once (per format and tokenizer) however many context requests
// read it. The log stays the truth: before every use, a cached memory
// catches up with the entries appended since it last looked, by this
// instance or any other sharing the store: one Get when nothing is new,
// and a read of the new entries when something is. So a context request
// sees every append acknowledged before it started.
//
// Catching up costs what was appended, not the session's length: new step
// entries are added to the memory as they are (their numbers are their
// sequence numbers, supplied by a journal that writes nothing, see
// replayJournal), keeping the cached counts of the steps already there. A
// compaction entry reorders the working set, so on one the memory is
// rebuilt from a working-set read (its counts are then redone lazily, for
// the steps a context shows).

// cache is a bounded LRU of session memories.
type cache struct {
	s   *Server
	max int

	mu   sync.Mutex
	lru  *list.List // of *view, most recent first
	byID map[string]*list.Element
}

func newCache(s *Server, max int) *cache {
	return &cache{s: s, max: max, lru: list.New(), byID: map[string]*list.Element{}}
}

// view is one session's cached memory.
type view struct {
	id string

	// mu serializes loading and catching up. Readers do not take it:
	// they load state, whose memory has its own lock.
	mu      sync.Mutex
	state   atomic.Pointer[viewState] // nil until loaded
	journal *replayJournal            // of state's memory; with mu held
}

// viewState is what a reader of a view gets: a memory and the log
// sequence number it reflects. The memory only grows after the state is
// published (catching up adds steps to it, then publishes a new state
// with the new seq), so it holds at least the entries up to seq. A reload
// publishes a new memory.
type viewState struct {
	mem     *agentmem.Memory
	seq     int64
	created time.Time // the session's CreatedAt, to notice a re-created ID
	tenant  string    // the session's tenant: only its requests get the view
	user    string    // the session's user, whose facts the context may hold
}

// get returns a session's memory, up to date with the log as of now,
// and the sequence number it reflects, if the session belongs to tenant.
// The session of another tenant is errNoSession, as a missing one is:
// the tenant is checked on every get, after the view caught up with the
// store (so a session deleted and created again by another tenant under
// the same ID is seen as such).
func (c *cache) get(ctx context.Context, tenant, id string) (*viewState, error) {
	v, hit := c.lookup(id)
	if hit {
		c.s.metrics.cache.WithLabelValues("hit").Inc()
	}
	st, err := v.sync(ctx, c)
	if err != nil {
		if hit && errors.Is(err, agentmem.ErrNotFound) {
			c.evict(id)
		}
		return nil, sessionErr(id, err)
	}
	if st.tenant != tenant {
		return nil, errNoSession(id)
	}
	if !hit {
		c.admit(v)
	}
	return st, nil
}

// lookup returns the cached view of id, or a new unloaded one that is not
// cached yet: it is admitted once it has loaded, so requests for sessions
// that do not exist cannot push real ones out.
func (c *cache) lookup(id string) (*view, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[id]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*view), true
	}
	return &view{id: id}, false
}

// admit caches a loaded view, evicting the least recently used beyond
// the bound. If a concurrent request admitted one for the same session
// first, that one stays.
func (c *cache) admit(v *view) {
	if c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byID[v.id]; ok {
		return
	}
	c.byID[v.id] = c.lru.PushFront(v)
	for c.lru.Len() > c.max {
		old := c.lru.Remove(c.lru.Back()).(*view)
		delete(c.byID, old.id)
		c.s.metrics.cache.WithLabelValues("evict").Inc()
	}
}

// evict drops a session's view.
func (c *cache) evict(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[id]; ok {
		c.lru.Remove(el)
		delete(c.byID, id)
	}
}

// clear drops every view.
func (c *cache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Init()
	c.byID = map[string]*list.Element{}
}

// len returns the number of cached views.
func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// sync brings the view up to date with the log and returns its state: it
// loads it on first use, then applies the entries appended since.
func (v *view) sync(ctx context.Context, c *cache) (*viewState, error) {
	st := v.state.Load()
	if st == nil {
		return v.load(ctx, c)
	}
	// The common case is that nothing was appended: a Get (one row)
	// tells, without taking the lock. Otherwise read what is new.
	sess, err := c.s.store.Get(ctx, v.id)
	if err != nil {
		return nil, err
	}
	if sess.LastSeq == st.seq && sess.CreatedAt.Equal(st.created) && sess.Tenant == st.tenant {
		return st, nil
	}
	resp, err := c.s.store.Read(ctx, store.ReadRequest{SessionID: v.id, After: st.seq})
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	cur := v.state.Load()
	if !resp.Session.CreatedAt.Equal(cur.created) || resp.Session.Tenant != cur.tenant || resp.Session.LastSeq < cur.seq {
		// The session was deleted and created again under the same ID.
		return v.reloadLocked(ctx, c)
	}
	var steps []store.Entry
	for _, e := range resp.Entries {
		if e.Seq <= cur.seq {
			continue // applied by a concurrent sync
		}
		if e.Kind == store.CompactionEntry {
			return v.reloadLocked(ctx, c)
		}
		if e.Kind == store.StepEntry && e.Step != nil {
			steps = append(steps, e)
		}
	}
	for _, e := range steps {
		if err := v.addLocked(ctx, cur.mem, e); err != nil {
			c.s.log.Warn("session cache: catching up failed; reloading", "session", v.id, "seq", e.Seq, "err", err)
			return v.reloadLocked(ctx, c)
		}
	}
	if len(steps) > 0 {
		c.s.metrics.cache.WithLabelValues("catchup").Inc()
	}
	if resp.Session.LastSeq <= cur.seq {
		return cur, nil
	}
	next := &viewState{mem: cur.mem, seq: resp.Session.LastSeq, created: cur.created, tenant: cur.tenant, user: cur.user}
	v.state.Store(next)
	return next, nil
}

// load loads the view on first use.
func (v *view) load(ctx context.Context, c *cache) (*viewState, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.state.Load(); st != nil {
		return st, nil // loaded by a concurrent request meanwhile
	}
	c.s.metrics.cache.WithLabelValues("miss").Inc()
	return v.reloadLocked(ctx, c)
}

// reloadLocked rebuilds the memory from a working-set read and publishes
// it. v.mu must be held.
func (v *view) reloadLocked(ctx context.Context, c *cache) (*viewState, error) {
	resp, err := c.s.store.Read(ctx, store.ReadRequest{SessionID: v.id, WorkingSet: true})
	if err != nil {
		return nil, err
	}
	j := &replayJournal{}
	mem := agentmem.New(agentmem.Options{Counter: c.s.counter, Journal: j, Clock: c.s.now})
	snap := &agentmem.Snapshot{Version: agentmem.SnapshotVersion, NextNumber: int(resp.Session.LastSeq) + 1, Steps: resp.Steps}
	if err := mem.Restore(snap); err != nil {
		return nil, fmt.Errorf("server: loading session %s: %w", v.id, err)
	}
	if v.state.Load() != nil {
		c.s.metrics.cache.WithLabelValues("reload").Inc()
	}
	st := &viewState{mem: mem, seq: resp.Session.LastSeq, created: resp.Session.CreatedAt, tenant: resp.Session.Tenant, user: resp.Session.UserID}
	v.journal = j
	v.state.Store(st)
	return st, nil
}

// addLocked adds a step entry read from the log to mem, under the number
// the log gave it. v.mu must be held.
func (v *view) addLocked(ctx context.Context, mem *agentmem.Memory, e store.Entry) error {
	if _, ok := mem.Step(int(e.Seq)); ok {
		return nil // already there (a load raced with an append)
	}
	v.journal.next = int(e.Seq)
	_, err := mem.Add(ctx, e.Step)
	return err
}

// replayJournal is the journal of a cached memory: the memory only
// mirrors the log, so the journal writes nothing and hands out the
// sequence number the step already has in the log (set in next before
// each Add). It refuses compactions: they go to the log through a memory
// bound to the session, never through the cache.
type replayJournal struct {
	next int
}

// Append implements agentmem.Journal.
func (j *replayJournal) Append(_ context.Context, steps []agentmem.Step) ([]int, error) {
	if len(steps) != 1 {
		return nil, fmt.Errorf("server: the session cache adds one step at a time, not %d", len(steps))
	}
	return []int{j.next}, nil
}

// Compact implements agentmem.Journal.
func (j *replayJournal) Compact(context.Context, agentmem.JournalCompaction) ([]int, error) {
	return nil, errors.New("server: a cached session memory is read-only; compact through a bound memory")
}
