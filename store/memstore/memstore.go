// Package memstore is the in-memory store.Store driver: no persistence, for
// tests, examples and short-lived programs. It keeps every behaviour of
// the store contract (sequence numbers, idempotent and conditional
// appends, compaction records, branches, expiry, pruning) and passes the
// storetest conformance suite, so code tested against it behaves the
// same on SQLite and PostgreSQL.
//
// Data is copied in and out: a caller can never change what the store
// holds by changing a value it passed in or got back. One mutex guards the
// whole store.
//
// Importing the package registers the "mem://" URL scheme with
// store.Open; each Open returns a new, empty store.
package memstore

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storekit"
)

func init() {
	store.Register("mem", func(_ context.Context, u *url.URL) (store.Driver, error) {
		if u.RawQuery != "" {
			return nil, fmt.Errorf("memstore: open %s: mem:// takes no options", u.Redacted())
		}
		return NewDriver(Options{}), nil
	})
}

// Options configures a Store.
type Options struct {
	// Clock returns the current time; nil means time.Now. Session and
	// entry times, expiry and Prune's default Now read it.
	Clock func() time.Time
}

// Store is the in-memory store.Driver, which New wraps in the portable
// store.Store. It is safe for concurrent use. It also implements
// store.Importer, store.Feed, store.Leaser, store.Segmenter and
// store.HeadReader.
type Store struct {
	clock func() time.Time

	mu       sync.Mutex
	closed   bool
	sessions map[store.Key]*session
	feed     feed // the change feed (feed.go)
	// leases are the feed consumers' leases, by consumer (feed.go).
	leases map[string]lease
}

var (
	_ store.Driver     = (*Store)(nil)
	_ store.Importer   = (*Store)(nil)
	_ store.Feed       = (*Store)(nil)
	_ store.Leaser     = (*Store)(nil)
	_ store.HeadReader = (*Store)(nil)
)

// session is a session's metadata and its own log. Entries are never
// changed once stored and never handed out without a copy, so they may be
// shared between a parent and the branches it is copied into.
type session struct {
	meta store.Session
	// parent is the session whose log this branch reads up to baseSeq:
	// nil for a session that is not a branch. When a branch's parent is
	// deleted, the parent's own entries the branch needs are copied into
	// it and it reads on from the parent's parent, as the database
	// backends do; meta.ParentID and meta.ForkSeq keep the original fork.
	parent   *session
	baseSeq  int64
	branches map[*session]struct{}
	entries  []store.Entry    // own entries, in sequence order
	ids      map[string]int64 // step ID -> seq, for own step entries
	// keys are the records of the idempotency keys of own entries.
	keys map[string]storekit.KeyRecord
}

// New returns an empty store.
func New(opts Options) *store.Store { return store.New(NewDriver(opts)) }

// NewDriver returns an empty store's driver, for what is its own (New
// wraps it in the portable store.Store).
func NewDriver(opts Options) *Store {
	c := opts.Clock
	if c == nil {
		c = time.Now
	}
	return &Store{clock: c, sessions: map[store.Key]*session{}}
}

func (st *Store) now() time.Time { return storekit.Now(st.clock) }

// lock checks the context and locks the store, refusing a closed one. The
// caller unlocks st.mu when lock returns nil. The context's error is
// returned as it is: the portable store.Store classifies it.
func (st *Store) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return store.ErrClosed
	}
	return nil
}

func notFound(id string) error {
	return fmt.Errorf("session %q: %w", id, agentmem.ErrNotFound)
}

// live returns the session of a tenant with this ID unless it is missing
// or expired. st.mu must be held.
func (st *Store) live(tenant, id string, now time.Time) (*session, error) {
	s := st.sessions[store.Key{Tenant: tenant, ID: id}]
	if s == nil || s.meta.Expired(now) {
		return nil, notFound(id)
	}
	return s, nil
}

// visible returns the session's log as a reader sees it, entries with
// seq <= upTo: the inherited history up to the fork point, then its own.
func (s *session) visible(upTo int64) []store.Entry {
	var out []store.Entry
	if s.parent != nil {
		out = s.parent.visible(min(upTo, s.baseSeq))
	}
	for _, e := range s.entries {
		if e.Seq > upTo {
			break
		}
		out = append(out, e)
	}
	return out
}

// visibleAfter returns the entries of visible(upTo) with seq > after,
// without going through those before (a reader catching up reads the
// newest few of a long log).
func (s *session) visibleAfter(after, upTo int64) []store.Entry {
	var out []store.Entry
	if s.parent != nil && after < s.baseSeq {
		out = s.parent.visibleAfter(after, min(upTo, s.baseSeq))
	}
	i := sort.Search(len(s.entries), func(i int) bool { return s.entries[i].Seq > after })
	for _, e := range s.entries[i:] {
		if e.Seq > upTo {
			break
		}
		out = append(out, e)
	}
	return out
}

// own returns the index of the session's own entry with this seq, or -1.
func (s *session) own(seq int64) int {
	i, ok := slices.BinarySearchFunc(s.entries, seq, func(e store.Entry, seq int64) int { return cmp.Compare(e.Seq, seq) })
	if !ok {
		return -1
	}
	return i
}

// owner returns the session whose own log holds the entry with this seq
// of s's visible log, and the entry's index there.
func (s *session) owner(seq int64) (*session, int) {
	if i := s.own(seq); i >= 0 {
		return s, i
	}
	if s.parent != nil && seq <= s.baseSeq {
		return s.parent.owner(seq)
	}
	return nil, -1
}

// stepBySeq returns the step entry with this seq in the visible log.
func (s *session) stepBySeq(seq int64) (agentmem.Step, bool) {
	o, i := s.owner(seq)
	if o == nil || o.entries[i].Kind != store.StepEntry {
		return nil, false
	}
	return o.entries[i].Step, true
}

// seqOfID returns the seq of the step with this ID in the visible log up
// to upTo.
func (s *session) seqOfID(id string, upTo int64) (int64, bool) {
	if seq, ok := s.ids[id]; ok && seq <= upTo {
		return seq, true
	}
	if s.parent != nil {
		return s.parent.seqOfID(id, min(upTo, s.baseSeq))
	}
	return 0, false
}

// keyRecord returns the record of an idempotency key in the visible log up
// to upTo: one whose entries are all there.
func (s *session) keyRecord(key string, upTo int64) *storekit.KeyRecord {
	if r, ok := s.keys[key]; ok && r.LastSeq <= upTo {
		return &r
	}
	if s.parent != nil {
		return s.parent.keyRecord(key, min(upTo, s.baseSeq))
	}
	return nil
}

// newestFull returns the newest compaction entry of the visible log up to
// upTo that is a full record (not an amendment), or nil.
func (s *session) newestFull(upTo int64) *store.Entry {
	for i := len(s.entries) - 1; i >= 0; i-- {
		if e := &s.entries[i]; e.Seq <= upTo && e.Kind == store.CompactionEntry && !e.Compaction.Amend {
			return e
		}
	}
	if s.parent != nil {
		return s.parent.newestFull(min(upTo, s.baseSeq))
	}
	return nil
}

func (s *session) reindex() {
	s.ids = make(map[string]int64, len(s.entries))
	for _, e := range s.entries {
		if e.Kind == store.StepEntry {
			s.ids[e.Step.Info().ID] = e.Seq
		}
	}
}

// Create implements store.Driver.
func (st *Store) Create(ctx context.Context, req store.CreateRequest) (*store.Session, error) {
	if err := st.lock(ctx); err != nil {
		return nil, err
	}
	defer st.mu.Unlock()
	now := st.now()
	if req.ID != "" && st.sessions[store.Key{Tenant: req.Tenant, ID: req.ID}] != nil {
		return nil, &store.ExistsError{Tenant: req.Tenant, ID: req.ID}
	}
	var parent *session
	if req.ParentID != "" {
		p, err := st.live(req.Tenant, req.ParentID, now)
		if err != nil {
			return nil, fmt.Errorf("parent: %w", err)
		}
		if req.ForkSeq == 0 {
			req.ForkSeq = p.meta.LastSeq
		}
		if req.ForkSeq > p.meta.LastSeq {
			return nil, &agentmem.InvalidError{Field: "fork_seq", Reason: fmt.Sprintf("%d is after the parent's last seq %d", req.ForkSeq, p.meta.LastSeq)}
		}
		parent = p
	}
	meta := storekit.NewSession(req, now)
	for st.sessions[meta.Key()] != nil { // a generated ID cannot collide, but be sure
		meta.ID = agentmem.NewID()
	}
	s := &session{meta: *meta, parent: parent, baseSeq: meta.ForkSeq, ids: map[string]int64{}}
	if parent != nil {
		if parent.branches == nil {
			parent.branches = map[*session]struct{}{}
		}
		parent.branches[s] = struct{}{}
	}
	st.sessions[meta.Key()] = s
	if parent != nil {
		st.feed.add(store.ChangeFork, meta, meta.ForkSeq, now)
	}
	return meta.Clone(), nil
}

// Get implements store.Driver.
func (st *Store) Get(ctx context.Context, tenant, id string) (*store.Session, error) {
	s, unlock, err := st.lockLive(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return s.meta.Clone(), nil
}

// Head implements store.HeadReader.
func (st *Store) Head(ctx context.Context, tenant, id string) (store.Head, error) {
	s, unlock, err := st.lockLive(ctx, tenant, id)
	if err != nil {
		return store.Head{}, err
	}
	defer unlock()
	return store.Head{CreatedAt: s.meta.CreatedAt, LastSeq: s.meta.LastSeq}, nil
}

// lockLive checks a session's key, locks the store and returns the live
// session, with the function that unlocks the store.
func (st *Store) lockLive(ctx context.Context, tenant, id string) (*session, func(), error) {
	if err := st.lock(ctx); err != nil {
		return nil, nil, err
	}
	s, err := st.live(tenant, id, st.now())
	if err != nil {
		st.mu.Unlock()
		return nil, nil, err
	}
	return s, st.mu.Unlock, nil
}

// Segments implements store.Segmenter.
func (st *Store) Segments(ctx context.Context, tenant, id string) ([]store.Segment, error) {
	s, unlock, err := st.lockLive(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []store.Segment
	var upTo int64 // 0: no bound
	for cur := s; cur != nil; cur = cur.parent {
		var after int64
		if cur.parent != nil {
			after = cur.baseSeq
		}
		if upTo == 0 || upTo > after {
			out = append(out, store.Segment{Session: cur.meta.ID, After: after, Through: upTo})
		}
		if cur.parent == nil || cur.baseSeq == 0 {
			break
		}
		if upTo == 0 || cur.baseSeq < upTo {
			upTo = cur.baseSeq
		}
	}
	return out, nil
}

// List implements store.Driver.
func (st *Store) List(ctx context.Context, req store.ListRequest) (*store.ListResponse, error) {
	size, after, err := store.ValidateList(req)
	if err != nil {
		return nil, err
	}
	if err := st.lock(ctx); err != nil {
		return nil, err
	}
	defer st.mu.Unlock()
	now := st.now()
	var match []*store.Session
	for _, s := range st.sessions {
		m := &s.meta
		if m.Expired(now) || !req.Matches(m) || (after != nil && !after.After(m.CreatedAt, m.ID, m.Tenant)) {
			continue
		}
		match = append(match, m)
	}
	sort.Slice(match, func(i, j int) bool {
		a, b := match[i], match[j]
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.After(b.CreatedAt)
		}
		if a.ID != b.ID {
			return a.ID > b.ID
		}
		return a.Tenant > b.Tenant
	})
	resp := &store.ListResponse{}
	if len(match) > size {
		match = match[:size]
		last := match[size-1]
		resp.NextPageToken = store.EncodePageToken(store.Cursor{CreatedAt: last.CreatedAt, ID: last.ID, Tenant: last.Tenant})
	}
	resp.Sessions = make([]*store.Session, len(match))
	for i, m := range match {
		resp.Sessions[i] = m.Clone()
	}
	return resp, nil
}

// Delete implements store.Driver. Branches of the session get a copy of
// the history they inherited from it first. Deleting an expired session
// that Prune has not yet removed succeeds.
func (st *Store) Delete(ctx context.Context, tenant, id string) error {
	if err := st.lock(ctx); err != nil {
		return err
	}
	defer st.mu.Unlock()
	s := st.sessions[store.Key{Tenant: tenant, ID: id}]
	if s == nil {
		return notFound(id)
	}
	st.delete(s)
	return nil
}

// delete removes a session, detaching its branches. st.mu must be held.
func (st *Store) delete(s *session) {
	now := st.now()
	for b := range s.branches {
		var own []store.Entry
		for _, e := range s.entries {
			if e.Seq > b.baseSeq {
				break
			}
			own = append(own, e)
		}
		b.entries = append(own, b.entries...)
		for k, r := range s.keys {
			if r.LastSeq <= b.baseSeq {
				if b.keys == nil {
					b.keys = map[string]storekit.KeyRecord{}
				}
				b.keys[k] = r
			}
		}
		for _, e := range own { // now the branch's own (store.ChangeAppend)
			st.feed.add(store.ChangeAppend, &b.meta, e.Seq, now)
		}
		b.parent = s.parent
		if s.parent != nil {
			b.baseSeq = min(s.baseSeq, b.baseSeq)
			s.parent.branches[b] = struct{}{}
		} else {
			b.baseSeq = 0
		}
		b.reindex()
	}
	if s.parent != nil {
		delete(s.parent.branches, s)
	}
	delete(st.sessions, s.meta.Key())
	st.feed.add(store.ChangeDelete, &s.meta, 0, now)
}

// Append implements store.Driver: storekit.PlanAppend over the session's
// log, under the store's lock.
func (st *Store) Append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	encoded, err := store.ValidateAppendEncoded(req)
	if err != nil {
		return nil, err
	}
	if err := st.lock(ctx); err != nil {
		return nil, err
	}
	defer st.mu.Unlock()
	now := st.now()
	s, err := st.live(req.Tenant, req.SessionID, now)
	if err != nil {
		return nil, err
	}
	resp, planned, err := storekit.PlanAppend(ctx, logView{s}, req.SessionID, s.meta.LastSeq, req, encoded)
	if err != nil || len(planned) == 0 {
		return resp, err
	}
	// Decode every new entry before changing anything (all or none): what
	// the store keeps is exactly what its encoding says, as on the
	// database backends.
	add := make([]store.Entry, len(planned))
	for i, p := range planned {
		e := store.Entry{Seq: p.Seq, Kind: p.Kind, Time: now}
		if p.Kind == store.StepEntry {
			e.Step, err = store.DecodeStep(p.Body)
		} else {
			e.Compaction, err = store.DecodeCompaction(p.Body)
		}
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", p.Seq, err)
		}
		add[i] = e
	}
	s.entries = append(s.entries, add...)
	for _, e := range add {
		if e.Kind == store.StepEntry {
			s.ids[e.Step.Info().ID] = e.Seq
		}
		st.feed.add(store.ChangeAppend, &s.meta, e.Seq, now)
	}
	s.meta.LastSeq = resp.LastSeq
	s.meta.UpdatedAt = now
	if k := req.Idempotency; k != nil {
		if s.keys == nil {
			s.keys = map[string]storekit.KeyRecord{}
		}
		s.keys[k.Key] = storekit.NewKeyRecord(k.Fingerprint, resp)
	}
	return resp, nil
}

// logView is storekit.LogView over a session's visible log, under the
// store's lock.
type logView struct{ s *session }

// Key implements storekit.LogView.
func (v logView) Key(_ context.Context, key string) (*storekit.KeyRecord, error) {
	return v.s.keyRecord(key, math.MaxInt64), nil
}

// StepsByID implements storekit.LogView.
func (v logView) StepsByID(_ context.Context, ids []string) (map[string]storekit.StoredStep, error) {
	var found map[string]storekit.StoredStep
	for _, id := range ids {
		if seq, ok := v.s.seqOfID(id, math.MaxInt64); ok {
			if found == nil {
				found = make(map[string]storekit.StoredStep, len(ids))
			}
			step, _ := v.s.stepBySeq(seq)
			found[id] = storekit.StoredStep{Seq: seq, Step: step}
		}
	}
	return found, nil
}

// CompactionAt implements storekit.LogView.
func (v logView) CompactionAt(_ context.Context, seq int64) (*store.CompactionRecord, error) {
	if o, i := v.s.owner(seq); o != nil && o.entries[i].Kind == store.CompactionEntry {
		return o.entries[i].Compaction, nil
	}
	return nil, nil
}

// CompactionLookup implements storekit.LogView.
func (v logView) CompactionLookup(_ context.Context, c *store.CompactionRecord, lastSeq int64) (func(int64) (agentmem.Step, bool), error) {
	if !c.Amend {
		return v.s.stepBySeq, nil
	}
	// An amendment's copies stand in for steps of the working set.
	var fullSeq int64
	var full *store.CompactionRecord
	if e := v.s.newestFull(math.MaxInt64); e != nil {
		fullSeq, full = e.Seq, e.Compaction
	}
	return func(seq int64) (agentmem.Step, bool) {
		if !storekit.InWorkingSet(seq, fullSeq, full) {
			return nil, false
		}
		return v.s.stepBySeq(seq)
	}, nil
}

// WorkingSteps implements storekit.LogView.
func (v logView) WorkingSteps(context.Context) ([]storekit.WorkingStep, error) {
	ws := store.WorkingSet(v.s.visible(math.MaxInt64))
	out := make([]storekit.WorkingStep, len(ws))
	for i, st := range ws {
		out[i] = storekit.WorkingStep{Seq: int64(st.Info().Number), Kind: st.Kind()}
	}
	return out, nil
}

// Read implements store.Driver.
func (st *Store) Read(ctx context.Context, req store.ReadRequest) (*store.ReadResponse, error) {
	if err := st.lock(ctx); err != nil {
		return nil, err
	}
	defer st.mu.Unlock()
	s, err := st.live(req.Tenant, req.SessionID, st.now())
	if err != nil {
		return nil, err
	}
	resp := &store.ReadResponse{Session: s.meta.Clone()}
	if req.WorkingSet {
		vis := s.visible(math.MaxInt64)
		ws := store.WorkingSet(vis)
		resp.Replaced = store.ReplacedSeqs(vis)
		resp.Steps = make([]agentmem.Step, len(ws))
		for i, step := range ws {
			resp.Steps[i] = agentmem.CloneStep(step)
		}
		return resp, nil
	}
	sel := storekit.SelectEntries(s.visibleAfter(req.After, math.MaxInt64), req)
	resp.Entries = make([]store.Entry, len(sel))
	for i, e := range sel {
		resp.Entries[i] = e.Clone()
	}
	return resp, nil
}

// Prune implements store.Driver.
func (st *Store) Prune(ctx context.Context, req store.PruneRequest) (*store.PruneResponse, error) {
	if err := st.lock(ctx); err != nil {
		return nil, err
	}
	defer st.mu.Unlock()
	now := req.Now
	if now.IsZero() {
		now = st.now()
	}
	resp := &store.PruneResponse{}
	for _, s := range st.sessions {
		if s.meta.Expired(now) {
			resp.Deleted = append(resp.Deleted, *s.meta.Clone())
			st.delete(s)
			resp.SessionsDeleted++
		}
	}
	if req.CoveredBefore.IsZero() {
		return resp, nil
	}
	// Keep every step some session's working set names, in the log of
	// the session that owns it (a branch's working set may name steps it
	// inherited).
	keep := map[*session]map[int64]bool{}
	for _, s := range st.sessions {
		for _, seq := range storekit.WorkingSeqs(s.visible(math.MaxInt64)) {
			if o, _ := s.owner(seq); o != nil {
				if keep[o] == nil {
					keep[o] = map[int64]bool{}
				}
				keep[o][seq] = true
			}
		}
	}
	for _, s := range st.sessions {
		kept := s.entries[:0:0]
		for _, e := range s.entries {
			if e.Kind == store.StepEntry && e.Time.Before(req.CoveredBefore) && !keep[s][e.Seq] {
				resp.EntriesDeleted++
				continue
			}
			kept = append(kept, e)
		}
		if len(kept) != len(s.entries) {
			s.entries = kept
			s.reindex()
		}
	}
	return resp, nil
}

// ImportEntries implements store.Importer.
func (st *Store) ImportEntries(ctx context.Context, s *store.Session, entries []store.Entry) error {
	own := make([]store.Entry, len(entries))
	for i, e := range entries {
		own[i] = store.Entry{Seq: e.Seq, Kind: e.Kind, Time: e.Time}
		switch e.Kind {
		case store.StepEntry:
			n, _, err := storekit.Normalize(e.Step, e.Seq)
			if err != nil {
				return fmt.Errorf("entries[%d]: %w", i, err)
			}
			own[i].Step = n
		case store.CompactionEntry:
			rec := e.Compaction.Clone()
			for k, r := range rec.Replaced {
				n, _, err := storekit.Normalize(r, int64(r.Info().Number))
				if err != nil {
					return fmt.Errorf("entries[%d].compaction.replaced[%d]: %w", i, k, err)
				}
				rec.Replaced[k] = n
			}
			own[i].Compaction = rec
		}
	}
	if err := st.lock(ctx); err != nil {
		return err
	}
	defer st.mu.Unlock()
	if st.sessions[s.Key()] != nil {
		return &store.ExistsError{Tenant: s.Tenant, ID: s.ID}
	}
	ns := &session{meta: *s.Clone(), entries: own}
	ns.reindex()
	st.sessions[s.Key()] = ns
	now := st.now()
	for _, e := range own {
		st.feed.add(store.ChangeAppend, s, e.Seq, now)
	}
	return nil
}

// Ping reports whether the store can serve: nil until Close, then
// store.ErrClosed.
func (st *Store) Ping(ctx context.Context) error {
	if err := st.lock(ctx); err != nil {
		return err
	}
	st.mu.Unlock()
	return nil
}

// Close implements store.Driver: it drops every session. Later calls
// return store.ErrClosed; closing again returns nil.
func (st *Store) Close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closed = true
	st.sessions = nil
	return nil
}
