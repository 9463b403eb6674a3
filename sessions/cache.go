package sessions

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// The session cache keeps, for recently used sessions, an
// agentmem.Replica of the session's working set, so that a step is
// rendered and counted once (per format and tokenizer) however many
// context requests read it. The log stays the truth. Before every use, a
// cached replica catches up with the entries appended since it last looked,
// by this instance or any other sharing the store. That costs one read of
// the session's head (store.Store.Head) when nothing is new, and a read of
// the new entries when something is. So a context request sees every
// append acknowledged before it started.
//
// Catching up costs what was appended, not the session's length. New step
// entries are put in the replica as they are, under their sequence numbers
// (Replica.Put), keeping the cached counts of the steps already there. An
// amendment, such as a tool result that completes a stored call or a popped
// result, puts its copies in place of the steps they stand in for
// (Replica.Replace). A full compaction entry reorders the working set, so
// on one the replica is rebuilt from a working-set read (its counts are
// then redone lazily, for the steps a context shows).
//
// The service's message-level writes (AppendMessages, Pop, Clear) take the
// working set they change from here too, up to date with the log, and
// what the service appends is put in the cached replica as it is
// written, when nothing else got in between.

// cache is an LRU of session replicas bounded by their size in bytes
// (see viewSize for what is counted).
//
// Loading a session holds its whole working set twice for a moment (the
// store's read and the replica built from it) and is CPU bound. So at most
// loadSlots loads run at once. When the sessions in use do not fit in the
// cache and every request loads one, the memory held beyond the cache is
// that of a few loads, not of every request in flight.
type cache struct {
	svc   *Service
	max   int64         // bytes; 0 keeps nothing
	loads chan struct{} // the load slots

	mu    sync.Mutex
	lru   *list.List // of *view, most recent first
	byKey map[store.Key]*list.Element
	bytes int64 // the sum of the cached views' sizes
}

func newCache(svc *Service, max int64) *cache {
	return &cache{svc: svc, max: max, loads: make(chan struct{}, loadSlots()), lru: list.New(), byKey: map[store.Key]*list.Element{}}
}

// loadSlots is the number of session loads that may run at once: one per
// CPU the process may use, and at least 2.
func loadSlots() int { return max(2, runtime.GOMAXPROCS(0)) }

// view is one session's cached replica.
type view struct {
	key store.Key // the session's tenant and ID

	// mu serializes loading and catching up. Readers do not take it:
	// they load state, whose replica has its own lock.
	mu    sync.Mutex
	state atomic.Pointer[viewState] // nil until loaded
	// copies are the numbers of the steps of state's replica that are
	// modified copies (store.ReadResponse.Replaced); with mu held.
	copies map[int]bool

	// With the cache's mu held: the forms (format and tokenizer) the
	// replica has rendered steps in, and the size the cache accounts for
	// the view while it holds it.
	forms []form
	size  int64
}

// form is a rendering of steps the replica caches: a format and a token
// counter, by name.
type form struct{ format, counter string }

// viewState is what a reader of a view gets: a replica and the log
// sequence number it reflects. The replica only grows after the state is
// published (catching up puts steps in it, then publishes a new state
// with the new seq), so it holds at least the entries up to seq. A reload
// publishes a new replica.
type viewState struct {
	rep     *agentmem.Replica
	seq     int64
	created time.Time // the session's CreatedAt, to notice a re-created ID
	user    string    // the session's user, whose facts the context may hold
	// steps is the number of steps in rep, and stepBytes the bytes of
	// their text (see stepBytes): what viewSize counts.
	steps     int
	stepBytes int64
}

// What a cached view is accounted was measured with runtime.MemStats on
// sessions of realistic steps. TestCacheAccountingConservative checks that
// the sum covers what a view really holds, in every format:
//
//   - viewOverhead once per view (the view, its replica and state);
//   - per step, the bytes of its text (stepBytes: its strings, its ID and
//     tool calls included) plus an eighth (Go's allocation size classes
//     round up) plus stepOverhead (the step's structs and its entry in
//     the replica);
//   - per step and per form it was rendered in (format and tokenizer:
//     the replica caches each), a copy of its text, again plus an eighth,
//     plus renderOverhead (the messages, their parts and costs). Formats
//     that rewrite the text (observation; openai for an action's
//     observation and code) copy it; others mostly share the step's
//     strings, and then this counts high.
//
// A form counts for every step from the first request that renders in it,
// although a context with a budget renders only the steps it shows. The
// replica's default form counts from the load. So the estimate errs high,
// by up to about two times.
const (
	viewOverhead   = 4 << 10
	stepOverhead   = 512
	renderOverhead = 1536
)

// viewSize is what the cache accounts for a replica of st's steps
// rendered in forms.
func viewSize(st *viewState, forms int) int64 {
	text := st.stepBytes + st.stepBytes/8
	return viewOverhead + text + int64(st.steps)*stepOverhead + int64(forms)*(text+int64(st.steps)*renderOverhead)
}

// stepBytes returns the bytes of the text a step holds: its strings and
// byte slices, found by walking its fields, so that a field added to a
// step type is counted without a change here. It is much cheaper than
// encoding the step, which would double the cost of loading a session.
func stepBytes(s agentmem.Step) int64 {
	return textBytes(reflect.ValueOf(s))
}

var timeType = reflect.TypeFor[time.Time]()

func textBytes(v reflect.Value) int64 {
	switch v.Kind() {
	case reflect.String:
		return int64(v.Len())
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 0
		}
		return textBytes(v.Elem())
	case reflect.Struct:
		if v.Type() == timeType {
			return 0 // its location is shared
		}
		var n int64
		for i := range v.NumField() {
			n += textBytes(v.Field(i))
		}
		return n
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return int64(v.Len())
		}
		var n int64
		for i := range v.Len() {
			n += textBytes(v.Index(i))
		}
		return n
	case reflect.Map:
		var n int64
		for it := v.MapRange(); it.Next(); {
			n += textBytes(it.Key()) + textBytes(it.Value())
		}
		return n
	}
	return 0
}

// get returns the replica of a tenant's session, up to date with the log
// as of now, and the sequence number it reflects. Views are kept per
// tenant and ID (IDs are per tenant), so another tenant's session is not
// found, as a missing one is. f is the form the caller will render the
// replica in: the cache accounts for it before it grows the replica.
func (c *cache) get(ctx context.Context, tenant, id string, f form) (*viewState, error) {
	key := store.Key{Tenant: tenant, ID: id}
	v, hit := c.lookup(key)
	if hit {
		c.svc.event("hit")
	}
	st, err := v.sync(ctx, c)
	if err != nil {
		if hit && errors.Is(err, agentmem.ErrNotFound) {
			c.evict(key)
		}
		return nil, err
	}
	c.account(v, &f)
	return st, nil
}

// with runs f on a session's view and its state, up to date with the log as
// of now (as get), holding the view's lock. The replica then holds the
// entries up to the state's seq. After a put that failed half-way, it holds
// some after it too, and a write conditional on the seq then loses and
// tries again. Neither catching up nor an append through the service
// changes it until f returns. f must be quick and must not use the
// cache.
func (c *cache) with(ctx context.Context, key store.Key, f func(*view, *viewState)) error {
	v, hit := c.lookup(key)
	if hit {
		c.svc.event("hit")
	}
	if _, err := v.sync(ctx, c); err != nil {
		if hit && errors.Is(err, agentmem.ErrNotFound) {
			c.evict(key)
		}
		return err
	}
	df := c.svc.defaultForm()
	c.account(v, &df)
	v.mu.Lock()
	defer v.mu.Unlock()
	f(v, v.state.Load())
	return nil
}

// lookup returns the cached view of a session, or a new unloaded one that
// is not cached yet: it is admitted once it has loaded, so requests for
// sessions that do not exist cannot push real ones out.
func (c *cache) lookup(key store.Key) (*view, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*view), true
	}
	return &view{key: key, forms: []form{c.svc.defaultForm()}}, false
}

// account brings the cache's accounting up to date with v, just synced,
// which its caller renders in f (nil: does not use it). v is admitted (or
// stays) as the most recently used. The least recently used views are
// evicted while the cache holds more than its bound. A view larger than
// the whole bound is not kept. If a concurrent request admitted another
// view of the same session first, that one stays.
func (c *cache) account(v *view, f *form) {
	if c.max <= 0 {
		return // no cache
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f != nil && !slices.Contains(v.forms, *f) {
		v.forms = append(v.forms, *f)
	}
	size := viewSize(v.state.Load(), len(v.forms))
	el, cached := c.byKey[v.key]
	if (cached && el.Value.(*view) != v) || (!cached && f == nil) {
		return
	}
	if size > c.max {
		if cached {
			c.removeLocked(el)
			c.svc.event("evict")
		}
		c.svc.event("too_large")
		c.gaugesLocked()
		return
	}
	if cached {
		c.lru.MoveToFront(el)
		c.bytes += size - v.size
	} else {
		c.byKey[v.key] = c.lru.PushFront(v)
		c.bytes += size
	}
	v.size = size
	for c.bytes > c.max {
		c.removeLocked(c.lru.Back())
		c.svc.event("evict")
	}
	c.gaugesLocked()
}

// removeLocked drops a cached view. c.mu must be held.
func (c *cache) removeLocked(el *list.Element) {
	v := c.lru.Remove(el).(*view)
	delete(c.byKey, v.key)
	c.bytes -= v.size
}

// gaugesLocked publishes the cache's size. c.mu must be held.
func (c *cache) gaugesLocked() {
	c.svc.size(c.bytes, c.lru.Len())
}

// evict drops a session's view.
func (c *cache) evict(key store.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.removeLocked(el)
		c.gaugesLocked()
	}
}

// clear drops every view.
func (c *cache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Init()
	c.byKey = map[store.Key]*list.Element{}
	c.bytes = 0
	c.gaugesLocked()
}

// sync brings the view up to date with the log and returns its state: it
// loads it on first use, then applies the entries appended since.
func (v *view) sync(ctx context.Context, c *cache) (*viewState, error) {
	st := v.state.Load()
	if st == nil {
		return v.load(ctx, c)
	}
	// The common case is that nothing was appended: the session's head
	// (store.Store.Head: its row, without the rest of the record) tells,
	// without taking the lock. Otherwise read what is new.
	head, err := c.svc.st.Head(ctx, v.key.Tenant, v.key.ID)
	if err != nil {
		return nil, err
	}
	if head.CreatedAt.Equal(st.created) {
		// An append through this service may have brought the replica
		// up to date meanwhile.
		if cur := v.state.Load(); head.LastSeq == cur.seq {
			return cur, nil
		}
	}
	resp, err := c.svc.st.Read(ctx, store.ReadRequest{Tenant: v.key.Tenant, SessionID: v.key.ID, After: st.seq})
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	cur := v.state.Load()
	if !resp.Session.CreatedAt.Equal(cur.created) {
		// The session was deleted and created again under the same ID.
		return v.reloadLocked(ctx, c)
	}
	if resp.Session.LastSeq < cur.seq {
		// Either the replica is newer than this read, or the session was
		// deleted and created again, with fewer entries, in the same tick
		// of the store's clock. The replica is newer when appends through
		// this service, or another request's catching up, added to it after
		// the read; many clients of one session make that common. A read
		// now tells which.
		now, err := c.svc.st.Head(ctx, v.key.Tenant, v.key.ID)
		if err != nil {
			return nil, err
		}
		if !now.CreatedAt.Equal(cur.created) || now.LastSeq < cur.seq {
			return v.reloadLocked(ctx, c)
		}
		return cur, nil
	}
	added, addedBytes, caught := 0, int64(0), false
	for _, e := range resp.Entries {
		if e.Seq <= cur.seq {
			continue // applied by a concurrent sync
		}
		switch {
		case e.Kind == store.CompactionEntry && e.Compaction != nil && e.Compaction.Amend:
			// An amendment (a tool result sent later, a popped result)
			// replaces a few steps by copies: applied in place.
			delta, err := v.amendLocked(cur.rep, e.Compaction)
			if err != nil {
				c.svc.log.Warn("session cache: applying an amendment failed; reloading", "tenant", v.key.Tenant, "session", v.key.ID, "seq", e.Seq, "err", err)
				return v.reloadLocked(ctx, c)
			}
			addedBytes += delta
			caught = true
		case e.Kind == store.CompactionEntry:
			// A full compaction reorders the working set: rebuilt.
			return v.reloadLocked(ctx, c)
		case e.Kind == store.StepEntry && e.Step != nil:
			ok, err := v.putLocked(cur.rep, e.Step, e.Seq)
			if err != nil {
				c.svc.log.Warn("session cache: catching up failed; reloading", "tenant", v.key.Tenant, "session", v.key.ID, "seq", e.Seq, "err", err)
				return v.reloadLocked(ctx, c)
			}
			if ok {
				added++
				addedBytes += stepBytes(e.Step)
			}
			caught = true
		}
	}
	if caught {
		c.svc.event("catchup")
	}
	if resp.Session.LastSeq <= cur.seq {
		return cur, nil
	}
	next := &viewState{rep: cur.rep, seq: resp.Session.LastSeq, created: cur.created, user: cur.user,
		steps: cur.steps + added, stepBytes: cur.stepBytes + addedBytes}
	v.state.Store(next)
	return next, nil
}

// appended puts in the cached replica of a session what an append wrote,
// when it follows what the replica holds (no other writer got in
// between): its steps, and an amendment's copies in place of the steps
// they stand in for. An append with a full compaction, or that stored
// nothing (a retry), changes nothing here, and the next use reads the
// log. The steps and copies added are copies of the request's, which the
// store encoded: as the log's, but for the decoding.
func (c *cache) appended(req store.AppendRequest, resp *store.AppendResponse) {
	rec := req.Compaction
	n := len(req.Steps)
	if c.max <= 0 || resp == nil || resp.Retried || len(resp.Seqs) != n || (rec != nil && !rec.Amend) || (n == 0 && rec == nil) {
		return
	}
	// The entries written are the steps, then the amendment, one after
	// another up to LastSeq.
	first := resp.LastSeq - int64(n) + 1
	if rec != nil {
		first--
		if resp.CompactionSeq != resp.LastSeq {
			return
		}
	} else if resp.CompactionSeq != 0 {
		return
	}
	for i, seq := range resp.Seqs {
		if seq != first+int64(i) {
			return
		}
	}
	key := store.Key{Tenant: req.Tenant, ID: req.SessionID}
	c.mu.Lock()
	el, ok := c.byKey[key]
	c.mu.Unlock()
	if !ok {
		return
	}
	v := el.Value.(*view)
	if !v.addAppended(c, first, req.Steps, rec, resp.LastSeq) {
		return
	}
	c.svc.event("append")
	c.account(v, nil)
}

// addAppended adds steps numbered from first and then applies the
// amendment rec (nil: none), and reports whether it did: only if the view
// holds the log up to first-1.
func (v *view) addAppended(c *cache, first int64, steps []agentmem.Step, rec *store.CompactionRecord, last int64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	cur := v.state.Load()
	if cur == nil || cur.seq != first-1 {
		return false
	}
	// On a failure the replica may hold some of what was written: the
	// next sync reads the log after cur.seq, skips the steps it holds
	// and, if an amendment does not apply, reloads.
	var bytes int64
	for i, s := range steps {
		if _, err := v.putLocked(cur.rep, s, first+int64(i)); err != nil {
			c.svc.log.Warn("session cache: adding appended steps failed; the log will be read", "tenant", v.key.Tenant, "session", v.key.ID, "seq", first+int64(i), "err", err)
			return false
		}
		bytes += stepBytes(s)
	}
	if rec != nil {
		delta, err := v.amendLocked(cur.rep, rec)
		if err != nil {
			c.svc.log.Warn("session cache: applying an appended amendment failed; the log will be read", "tenant", v.key.Tenant, "session", v.key.ID, "seq", last, "err", err)
			return false
		}
		bytes += delta
	}
	v.state.Store(&viewState{rep: cur.rep, seq: last, created: cur.created, user: cur.user,
		steps: cur.steps + len(steps), stepBytes: cur.stepBytes + bytes})
	return true
}

// load loads the view on first use.
func (v *view) load(ctx context.Context, c *cache) (*viewState, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.state.Load(); st != nil {
		return st, nil // loaded by a concurrent request meanwhile
	}
	c.svc.event("miss")
	return v.reloadLocked(ctx, c)
}

// reloadLocked rebuilds the replica from a working-set read and
// publishes it. v.mu must be held.
func (v *view) reloadLocked(ctx context.Context, c *cache) (*viewState, error) {
	select {
	case c.loads <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.loads }()
	resp, err := c.svc.st.Read(ctx, store.ReadRequest{Tenant: v.key.Tenant, SessionID: v.key.ID, WorkingSet: true})
	if err != nil {
		return nil, err
	}
	// The replica pins what the session pins. It is a new one, not the
	// old one reset: readers may hold the old one with the seq it
	// reflects.
	pin := resp.Session.EffectivePinning()
	rep, err := agentmem.NewReplica(resp.Steps, agentmem.ReplicaOptions{Counter: c.svc.counter, Pinning: &pin, Clock: c.svc.now})
	if err != nil {
		return nil, fmt.Errorf("sessions: loading session %s: %w", v.key.ID, err)
	}
	if v.state.Load() != nil {
		c.svc.event("reload")
	}
	st := &viewState{rep: rep, seq: resp.Session.LastSeq, created: resp.Session.CreatedAt, user: resp.Session.UserID,
		steps: len(resp.Steps)}
	for _, s := range resp.Steps {
		st.stepBytes += stepBytes(s)
	}
	v.copies = make(map[int]bool, len(resp.Replaced))
	for _, n := range resp.Replaced {
		v.copies[int(n)] = true
	}
	v.state.Store(st)
	return st, nil
}

// putLocked puts a step of the log, at sequence number seq, in rep, and
// reports whether it did: not when rep holds it already (a load raced
// with an append). v.mu must be held.
func (v *view) putLocked(rep *agentmem.Replica, s agentmem.Step, seq int64) (bool, error) {
	if s.Info().Number != int(seq) {
		s = store.WithNumber(s, seq) // a step as the service appended it
	}
	return rep.Put(s)
}

// amendLocked applies an amendment (read from the log, or appended
// through the service) to rep: each copy it carries replaces the step of
// the working set with its number (agentmem.Replica.Replace, which costs
// what the copies do). It returns the change in the steps' bytes. A copy
// of a step rep does not hold is an error (the caller reloads). v.mu must
// be held.
func (v *view) amendLocked(rep *agentmem.Replica, rec *store.CompactionRecord) (int64, error) {
	old, err := rep.Replace(rec.Replaced...)
	if err != nil {
		return 0, err
	}
	var delta int64
	for i, r := range rec.Replaced {
		delta += stepBytes(r) - stepBytes(old[i])
		v.copies[r.Info().Number] = true
	}
	return delta, nil
}

// CacheStats is the state of a Service's context cache.
type CacheStats struct {
	// Bytes is what the cache accounts for the sessions it holds, at most
	// Max (0: the service keeps no cache).
	Bytes, Max int64
	// Sessions is the number of sessions it holds.
	Sessions int
}

// CacheStats returns the state of the context cache.
func (s *Service) CacheStats() CacheStats {
	c := s.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Bytes: c.bytes, Max: c.max, Sessions: c.lru.Len()}
}

// Cached reports whether the context cache holds a session's working set.
func (s *Service) Cached(tenant, id string) bool {
	c := s.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.byKey[store.Key{Tenant: tenant, ID: id}]
	return ok
}

// DropCache empties the context cache; the service goes on (and fills it
// again as sessions are read).
func (s *Service) DropCache() { s.cache.clear() }

// CheckCache checks the context cache's books, for tests and debugging:
// every session it lists is indexed, the bytes it accounts are the sum of
// its sessions' sizes, and they are within its bound.
func (s *Service) CheckCache() error {
	c := s.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	var sum int64
	for el := c.lru.Front(); el != nil; el = el.Next() {
		v := el.Value.(*view)
		if c.byKey[v.key] != el {
			return fmt.Errorf("sessions: the cached session %s/%s is listed but not indexed", v.key.Tenant, v.key.ID)
		}
		sum += v.size
	}
	switch {
	case sum != c.bytes || len(c.byKey) != c.lru.Len():
		return fmt.Errorf("sessions: the cache accounts %d bytes, its sessions sum to %d; %d indexed, %d listed", c.bytes, sum, len(c.byKey), c.lru.Len())
	case c.bytes > c.max:
		return fmt.Errorf("sessions: the cache holds %d bytes, over its bound of %d", c.bytes, c.max)
	}
	return nil
}
