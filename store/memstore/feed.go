package memstore

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storekit"
)

// feed is the store's change feed: a record per change, numbered from 1
// in the order the changes were made (under the store's lock, so in
// commit order), and the consumers' cursors. Records every consumer has
// read are dropped.
type feed struct {
	recs    []feedRec
	last    int64 // the position of the newest record ever added
	cursors map[string]store.FeedCursor
}

// feedRec is one change, as the database backends keep it: what changed,
// not a copy of it (ReadFeed looks the session and entry up).
type feedRec struct {
	pos     int64
	kind    store.ChangeKind
	session string
	tenant  string
	seq     int64
	time    time.Time
}

// add records a change. st.mu must be held.
func (f *feed) add(kind store.ChangeKind, sess *store.Session, seq int64, now time.Time) {
	f.last++
	f.recs = append(f.recs, feedRec{pos: f.last, kind: kind, session: sess.ID, tenant: sess.Tenant, seq: seq, time: now})
}

// ReadFeed implements store.Feed.
func (st *Store) ReadFeed(ctx context.Context, req store.FeedRequest) (*store.FeedResponse, error) {
	limit, err := store.ValidateFeed(req)
	if err != nil {
		return nil, err
	}
	if err := st.lock(ctx); err != nil {
		return nil, err
	}
	defer st.mu.Unlock()
	f := &st.feed
	i := sort.Search(len(f.recs), func(i int) bool { return f.recs[i].pos > req.After.Pos })
	resp := &store.FeedResponse{Next: req.After}
	now := st.now()
	sessions := map[store.Key]*store.Session{}
	for ; i < len(f.recs) && len(resp.Changes) < limit; i++ {
		r := f.recs[i]
		c := store.Change{Kind: r.kind, SessionID: r.session, Tenant: r.tenant, Seq: r.seq, Time: r.time}
		if r.kind != store.ChangeDelete {
			key := store.Key{Tenant: r.tenant, ID: r.session}
			sess, seen := sessions[key]
			if !seen {
				if s, err := st.live(r.tenant, r.session, now); err == nil {
					sess = s.meta.Clone()
				}
				sessions[key] = sess
			}
			c.Session = sess
			if sess != nil && r.kind == store.ChangeAppend && !req.WithoutEntries {
				if o, k := st.sessions[key].owner(r.seq); o != nil {
					e := o.entries[k].Clone()
					c.Entry = &e
				}
			}
		}
		resp.Changes = append(resp.Changes, c)
		resp.Next = store.FeedCursor{Pos: r.pos}
	}
	resp.More = i < len(f.recs)
	resp.Through = resp.Next.Pos + 1
	if !resp.More {
		resp.Through = f.last + 1 // every change so far is read (or trimmed)
	}
	return resp, nil
}

// FeedHead implements store.Feed.
func (st *Store) FeedHead(ctx context.Context) (int64, error) {
	if err := st.lock(ctx); err != nil {
		return 0, err
	}
	defer st.mu.Unlock()
	return st.feed.last + 1, nil
}

// LoadCursor implements store.Feed.
func (st *Store) LoadCursor(ctx context.Context, consumer string) (store.FeedCursor, error) {
	if err := st.lock(ctx); err != nil {
		return store.FeedCursor{}, err
	}
	defer st.mu.Unlock()
	return st.feed.cursors[consumer], nil
}

// SaveCursor implements store.Feed. The records every consumer has read
// are dropped.
func (st *Store) SaveCursor(ctx context.Context, consumer string, c store.FeedCursor) error {
	if err := st.lock(ctx); err != nil {
		return err
	}
	defer st.mu.Unlock()
	st.feed.save(consumer, c)
	return nil
}

// save saves a consumer's cursor unless the one saved is ahead, and drops
// the records every consumer has read.
func (f *feed) save(consumer string, c store.FeedCursor) {
	if f.cursors == nil {
		f.cursors = map[string]store.FeedCursor{}
	}
	if old, ok := f.cursors[consumer]; ok && old.Pos >= c.Pos {
		return
	}
	f.cursors[consumer] = c
	f.trim()
}

// DropCursor implements store.Feed. The records every remaining consumer
// has read are dropped.
func (st *Store) DropCursor(ctx context.Context, consumer string) error {
	if err := st.lock(ctx); err != nil {
		return err
	}
	defer st.mu.Unlock()
	if _, ok := st.feed.cursors[consumer]; !ok {
		return nil
	}
	delete(st.feed.cursors, consumer)
	st.feed.trim()
	return nil
}

// trim drops the records every consumer with a cursor has read (none
// when no consumer has one).
func (f *feed) trim() {
	if len(f.cursors) == 0 {
		return
	}
	low := int64(math.MaxInt64)
	for _, cur := range f.cursors {
		low = min(low, cur.Pos)
	}
	i := sort.Search(len(f.recs), func(i int) bool { return f.recs[i].pos > low })
	f.recs = append(f.recs[:0:0], f.recs[i:]...)
}

// lease is a consumer's lease (store.Leaser): its holder of record and
// when its hold expires.
type lease struct {
	holder  string
	expires time.Time
}

// AcquireLease implements store.Leaser.
func (st *Store) AcquireLease(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	if err := st.lock(ctx); err != nil {
		return store.Lease{}, err
	}
	defer st.mu.Unlock()
	now := st.now()
	l, ok := st.leases[req.Consumer]
	if ok && l.holder != req.Holder && now.Before(l.expires) {
		return store.Lease{Holder: l.holder, Expires: l.expires}, nil
	}
	if st.leases == nil {
		st.leases = map[string]lease{}
	}
	l = lease{holder: req.Holder, expires: storekit.LeaseExpiry(now, req.TTL)}
	st.leases[req.Consumer] = l
	return store.Lease{Held: true, Holder: l.holder, Expires: l.expires}, nil
}

// RenewLease implements store.Leaser.
func (st *Store) RenewLease(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	if err := st.lock(ctx); err != nil {
		return store.Lease{}, err
	}
	defer st.mu.Unlock()
	l, ok := st.leases[req.Consumer]
	if !ok {
		return store.Lease{}, nil
	}
	if l.holder != req.Holder {
		return store.Lease{Holder: l.holder, Expires: l.expires}, nil
	}
	l.expires = storekit.LeaseExpiry(st.now(), req.TTL)
	st.leases[req.Consumer] = l
	return store.Lease{Held: true, Holder: l.holder, Expires: l.expires}, nil
}

// ReleaseLease implements store.Leaser.
func (st *Store) ReleaseLease(ctx context.Context, consumer, holder string) error {
	if err := st.lock(ctx); err != nil {
		return err
	}
	defer st.mu.Unlock()
	if l, ok := st.leases[consumer]; ok && l.holder == holder {
		delete(st.leases, consumer)
	}
	return nil
}

// SaveLeasedCursor implements store.Leaser.
func (st *Store) SaveLeasedCursor(ctx context.Context, consumer, holder string, c store.FeedCursor) error {
	if err := st.lock(ctx); err != nil {
		return err
	}
	defer st.mu.Unlock()
	if l, ok := st.leases[consumer]; !ok || l.holder != holder {
		return store.ErrLeaseLost
	}
	st.feed.save(consumer, c)
	return nil
}
