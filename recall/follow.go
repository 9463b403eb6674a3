package recall

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// Follower keeps conversation recall in step with a store's log by
// following the store's change feed (store.Feed) in the background: it
// reads the changes after its durable cursor in batches, indexes the
// entries appended (StepDocs: steps, and the copies of amendments, such
// as an action completed by a tool result appended later), the history a
// branch inherits (unless the index resolves branches' lineage: see
// Options.Lineage), and forgets deleted sessions, then saves its cursor. Nothing is indexed on a
// request's path, so a client that goes away after its append is
// acknowledged, or a process that crashes right after committing, cannot
// leave a turn unsearchable: whichever process follows the feed next
// resumes at the saved cursor. Indexing is idempotent (an upsert by
// step), so a batch read again after a crash does no harm.
//
// Run follows the feed until its context ends; Notify wakes it at once
// after a write (otherwise it polls, to see the writes of other processes
// sharing the store); Sync waits until everything committed before it is
// indexed (read-your-writes). Its methods are safe for concurrent use.
type Follower struct {
	feed store.Feed
	st   store.Store
	x    *Indexer
	opts FollowerOptions

	notify chan struct{} // buffered: a pending wake-up
	urgent chan struct{} // buffered: a wake-up that skips the settling (Sync)

	mu       sync.Mutex
	through  int64         // the feed watermark applied
	progress chan struct{} // closed and replaced when through moves
	behind   time.Time     // the time of the oldest change read but not yet applied
	status   FollowStatus
	watchers []func(BatchInfo)
}

// FollowerOptions configure a Follower. The zero value is a good default.
type FollowerOptions struct {
	// Consumer names the follower's durable cursor in the store; empty
	// means "recall". Followers in several processes sharing one store
	// under one name share the cursor (each indexes what it reads, which
	// is harmless: indexing is idempotent).
	Consumer string
	// Batch is the most changes read and indexed at once; 0 means 512.
	Batch int
	// Poll is how long the follower waits, when the feed is quiet and
	// nothing notified it, before it looks again (for writes by other
	// processes); 0 means 250ms.
	Poll time.Duration
	// Settle is how long the follower lets writes gather after it is
	// notified of one, before it reads the feed: under a steady stream of
	// appends it then indexes them in batches of many, one index
	// transaction for each, rather than one for every append (on SQLite
	// the index's writes share the store's one writer with the appends).
	// 0 means DefaultSettle; a negative value reads at once.
	Settle time.Duration
	// OnError, when set, receives failures. Reading or indexing that
	// fails is retried with backoff (up to 5s); a change that can never
	// be indexed (a corrupt entry, a document the index refuses) is
	// reported and skipped.
	OnError func(err error)
	// OnBatch, when set, is told of every batch applied.
	OnBatch func(BatchInfo)
}

// BatchInfo describes a batch of changes a Follower applied.
type BatchInfo struct {
	// Changes is the number of changes in the batch and Docs the number
	// of documents it wrote.
	Changes, Docs int
	// Lags are, for each change, how long after it was committed it was
	// indexed (by the store's clock against this process's).
	Lags []time.Duration
	// Took is how long applying the batch took.
	Took time.Duration
}

// FollowStatus is a Follower's progress.
type FollowStatus struct {
	// Running says that Run is following the feed.
	Running bool
	// Through is the feed watermark indexed (see store.FeedResponse).
	Through int64
	// Cursor is the position after the last change indexed.
	Cursor store.FeedCursor
	// Lag is how long the oldest change read but not yet indexed has
	// waited; zero when the follower has caught up with what it read.
	Lag time.Duration
	// Applied counts the changes indexed since the follower started,
	// Errors the failures.
	Applied, Errors int64
	// LastError is the newest failure's message, empty if none since
	// the last batch indexed.
	LastError string
}

// DefaultConsumer is the cursor name of a Follower's zero Options.
const DefaultConsumer = "recall"

// NewFollower returns a Follower that indexes what feed reports about
// st's sessions into x. It does nothing until Run.
func NewFollower(feed store.Feed, st store.Store, x *Indexer, opts FollowerOptions) *Follower {
	if opts.Consumer == "" {
		opts.Consumer = DefaultConsumer
	}
	if opts.Batch <= 0 {
		opts.Batch = 512
	}
	opts.Batch = min(opts.Batch, store.MaxFeedLimit)
	if opts.Poll <= 0 {
		opts.Poll = 250 * time.Millisecond
	}
	if opts.Settle == 0 {
		opts.Settle = DefaultSettle
	}
	return &Follower{feed: feed, st: st, x: x, opts: opts, notify: make(chan struct{}, 1), urgent: make(chan struct{}, 1), progress: make(chan struct{})}
}

// DefaultSettle is FollowerOptions.Settle when it is 0: a few
// milliseconds of the index's lag for batches of all the appends made
// meanwhile.
const DefaultSettle = 20 * time.Millisecond

// Observe adds fn to the functions told of every batch applied (after
// FollowerOptions.OnBatch), such as a server's metrics.
func (f *Follower) Observe(fn func(BatchInfo)) {
	f.mu.Lock()
	f.watchers = append(f.watchers, fn)
	f.mu.Unlock()
}

// Notify wakes the follower to read the feed now.
func (f *Follower) Notify() {
	select {
	case f.notify <- struct{}{}:
	default:
	}
}

// Status returns the follower's progress.
func (f *Follower) Status() FollowStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.status
	st.Through = f.through
	if !f.behind.IsZero() {
		st.Lag = max(time.Since(f.behind), 0)
	}
	return st
}

// Sync waits until every change committed to the store before the call
// has been indexed, or ctx ends. Run must be running (in this process)
// for it to return nil.
func (f *Follower) Sync(ctx context.Context) error {
	head, err := f.feed.FeedHead(ctx)
	if err != nil {
		return err
	}
	select { // read now, without letting writes settle
	case f.urgent <- struct{}{}:
	default:
	}
	for {
		f.mu.Lock()
		through, ch := f.through, f.progress
		f.mu.Unlock()
		if through >= head {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("recall: waiting for the index to reach the log: %w", ctx.Err())
		}
	}
}

// Run follows the feed until ctx ends (returning nil) or the store is
// closed (returning store.ErrClosed). Failures are reported to OnError
// and retried.
func (f *Follower) Run(ctx context.Context) error {
	f.setRunning(true)
	defer f.setRunning(false)
	backoff := newBackoff()
	var cur store.FeedCursor
	for {
		c, err := f.feed.LoadCursor(ctx, f.opts.Consumer)
		if err == nil && c == (store.FeedCursor{}) {
			// Register, so that the feed keeps what this consumer has
			// not read yet (a no-op for a consumer at the start).
			err = f.feed.SaveCursor(ctx, f.opts.Consumer, c)
		}
		if err == nil {
			cur = c
			break
		}
		if stop, err := f.failed(ctx, err, backoff); stop {
			return err
		}
	}
	f.mu.Lock()
	f.status.Cursor = cur
	f.mu.Unlock()
	timer := time.NewTimer(f.opts.Poll)
	defer timer.Stop()
	for {
		if ctx.Err() != nil {
			return nil
		}
		resp, err := f.feed.ReadFeed(ctx, store.FeedRequest{After: cur, Limit: f.opts.Batch})
		if err == nil && len(resp.Changes) > 0 {
			f.markBehind(resp.Changes[0].Time)
			err = f.apply(ctx, resp.Changes)
			if err == nil {
				// A cursor that fails to save only means rereading (and
				// reindexing, harmlessly) after a restart.
				if serr := f.feed.SaveCursor(ctx, f.opts.Consumer, resp.Next); serr != nil && !errors.Is(serr, context.Canceled) {
					f.report(fmt.Errorf("recall: saving the feed cursor: %w", serr))
				}
			}
		}
		if err != nil {
			if stop, err := f.failed(ctx, err, backoff); stop {
				return err
			}
			continue
		}
		backoff.reset()
		cur = resp.Next
		f.advance(resp, len(resp.Changes))
		if resp.More {
			continue
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(f.opts.Poll)
		select {
		case <-ctx.Done():
			return nil
		case <-f.notify:
			if f.opts.Settle > 0 {
				// Let the writes that follow this one gather (unless a
				// Sync waits).
				timer.Reset(f.opts.Settle)
				select {
				case <-ctx.Done():
					return nil
				case <-timer.C:
				case <-f.urgent:
				}
			}
		case <-f.urgent:
		case <-timer.C:
		}
	}
}

// failed reports err and waits out the backoff; it says whether Run must
// stop (its context ended or the store is closed) and with what.
func (f *Follower) failed(ctx context.Context, err error, b *backoff) (bool, error) {
	switch {
	case ctx.Err() != nil:
		return true, nil
	case errors.Is(err, store.ErrClosed):
		return true, err
	}
	f.report(err)
	select {
	case <-ctx.Done():
		return true, nil
	case <-time.After(b.next()):
		return false, nil
	}
}

func (f *Follower) setRunning(on bool) {
	f.mu.Lock()
	f.status.Running = on
	f.mu.Unlock()
}

func (f *Follower) markBehind(t time.Time) {
	f.mu.Lock()
	if f.behind.IsZero() && !t.IsZero() {
		f.behind = t
	}
	f.mu.Unlock()
}

// advance publishes a batch applied.
func (f *Follower) advance(resp *store.FeedResponse, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status.Cursor = resp.Next
	f.status.Applied += int64(n)
	if n > 0 {
		f.status.LastError = ""
	}
	switch {
	case !resp.More:
		f.behind = time.Time{}
	case n > 0:
		// More is waiting: the oldest change not applied yet was made
		// after the newest applied, so its wait is at most this one's.
		f.behind = resp.Changes[n-1].Time
	}
	if resp.Through > f.through {
		f.through = resp.Through
		close(f.progress)
		f.progress = make(chan struct{})
	}
}

func (f *Follower) report(err error) {
	f.mu.Lock()
	f.status.Errors++
	f.status.LastError = err.Error()
	f.mu.Unlock()
	if f.opts.OnError != nil {
		f.opts.OnError(err)
	}
}

// maxFlush bounds the documents written in one upsert.
const maxFlush = 1024

// apply indexes a batch of changes, in order: the documents of appended
// entries and forked histories are written together, per tenant, and a
// deletion drops the session's documents collected before it, then
// forgets the session.
func (f *Follower) apply(ctx context.Context, changes []store.Change) error {
	start := time.Now()
	w := &docWriter{ctx: ctx, f: f}
	for _, c := range changes {
		switch c.Kind {
		case store.ChangeAppend:
			if c.Err != nil {
				f.report(fmt.Errorf("recall: skipping entry %d of session %q: %w", c.Seq, c.SessionID, c.Err))
				continue
			}
			if c.Session == nil || c.Entry == nil {
				continue // gone since: nothing to index
			}
			if err := w.add(StepDocs(c.Session, *c.Entry)); err != nil {
				return err
			}
		case store.ChangeFork:
			if c.Session == nil || f.x.lineage() {
				continue // gone, or found through its lineage
			}
			if err := f.forked(ctx, w, c.Session, c.Seq); err != nil {
				return err
			}
		case store.ChangeDelete:
			// The session's documents collected so far would be written
			// only to be forgotten: they are dropped instead, and the
			// rest stays collected (a flush here split a batch in two
			// at every deletion, and bench load's mixed traffic, with a
			// deletion every few dozen changes, kept the index seconds
			// behind).
			w.forget(c.Tenant, c.SessionID)
			if _, err := f.x.Forget(ctx, &store.Session{ID: c.SessionID, Tenant: c.Tenant}); err != nil {
				return err
			}
		}
	}
	if err := w.flush(); err != nil {
		return err
	}
	f.mu.Lock()
	watchers := f.watchers
	f.mu.Unlock()
	if f.opts.OnBatch != nil || len(watchers) > 0 {
		now := time.Now()
		info := BatchInfo{Changes: len(changes), Docs: w.written, Took: now.Sub(start), Lags: make([]time.Duration, len(changes))}
		for i, c := range changes {
			info.Lags[i] = max(now.Sub(c.Time), 0)
		}
		if f.opts.OnBatch != nil {
			f.opts.OnBatch(info)
		}
		for _, fn := range watchers {
			fn(info)
		}
	}
	return nil
}

// forked indexes the history a branch inherited, up to its fork point.
func (f *Follower) forked(ctx context.Context, w *docWriter, sess *store.Session, upTo int64) error {
	var after int64
	for after < upTo {
		resp, err := f.st.Read(ctx, store.ReadRequest{Tenant: sess.Tenant, SessionID: sess.ID, After: after, Limit: 1000})
		if errors.Is(err, agentmem.ErrNotFound) {
			return nil // deleted since: its delete change follows
		}
		if err != nil {
			return err
		}
		if len(resp.Entries) == 0 {
			return nil
		}
		for _, e := range resp.Entries {
			if e.Seq > upTo {
				return nil
			}
			if err := w.add(StepDocs(resp.Session, e)); err != nil {
				return err
			}
			after = e.Seq
		}
	}
	return nil
}

// docWriter collects documents per tenant and upserts them in bounded
// groups. Of two documents with one ID, collected or indexed, the one
// made from the later log entry (EntrySeq) is kept: a step's entry
// comes after its amendments only when a deleted parent hands a branch
// the history the branch inherited, and the branch may have amended one
// of those steps already (a tool's result for a call its parent left
// pending); and an index that follows the log again from an older
// cursor, or was backfilled, holds documents newer than the entries it
// reads again.
type docWriter struct {
	ctx     context.Context
	f       *Follower
	tenants []string           // in the order first seen
	sets    map[string]*docSet // by tenant
	n       int
	written int
}

func (w *docWriter) add(docs []Doc) error {
	if w.sets == nil {
		w.sets = map[string]*docSet{}
	}
	for _, d := range docs {
		set := w.sets[d.Tenant]
		if set == nil {
			set = &docSet{}
			w.sets[d.Tenant] = set
			w.tenants = append(w.tenants, d.Tenant)
		}
		if i, ok := set.at[d.ID]; ok && EntrySeq(&set.docs[i]) > EntrySeq(&d) {
			continue
		}
		before := len(set.docs)
		set.add(d)
		w.n += len(set.docs) - before
	}
	if w.n >= maxFlush {
		return w.flush()
	}
	return nil
}

// forget drops the documents collected of a tenant's session (those
// whose MetaSession is session), which Indexer.Forget removes from the
// index.
func (w *docWriter) forget(tenant, session string) {
	set := w.sets[tenant]
	if set == nil {
		return
	}
	kept := slices.DeleteFunc(set.docs, func(d Doc) bool { return d.Metadata[MetaSession] == session })
	if len(kept) == len(set.docs) {
		return
	}
	w.n -= len(set.docs) - len(kept)
	set.docs = kept
	clear(set.at)
	for i, d := range kept {
		set.at[d.ID] = i
	}
}

// newer drops from docs those whose turns the index holds from a later
// log entry.
func (w *docWriter) newer(tenant string, docs []Doc) ([]Doc, error) {
	ids := make([]string, 0, len(docs))
	for i := range docs {
		if CheckID(docs[i].ID) == nil { // Upsert reports the others
			ids = append(ids, docs[i].ID)
		}
	}
	have, err := w.f.x.Index.b.Get(w.ctx, tenant, ids...)
	if err != nil || len(have) == 0 {
		return docs, err
	}
	held := make(map[string]int64, len(have))
	for i := range have {
		held[have[i].ID] = EntrySeq(&have[i])
	}
	return slices.DeleteFunc(docs, func(d Doc) bool {
		seq, ok := held[d.ID]
		return ok && seq > EntrySeq(&d)
	}), nil
}

// flush writes the documents collected. A group the index refuses as
// invalid is written one document at a time, and the documents it still
// refuses are reported and skipped, so that one bad document cannot
// stop the feed.
func (w *docWriter) flush() error {
	for _, t := range w.tenants {
		docs, err := w.newer(t, w.sets[t].docs)
		if err != nil {
			return err
		}
		if len(docs) == 0 {
			continue
		}
		err = w.f.x.Index.Upsert(w.ctx, docs...)
		if errors.Is(err, agentmem.ErrInvalid) {
			err = nil
			for _, d := range docs {
				if e := w.f.x.Index.Upsert(w.ctx, d); errors.Is(e, agentmem.ErrInvalid) {
					w.f.report(fmt.Errorf("recall: skipping document %q: %w", d.ID, e))
				} else if e != nil {
					return e
				}
			}
		}
		if err != nil {
			return err
		}
		w.written += len(docs)
	}
	w.tenants, w.sets, w.n = nil, nil, 0
	return nil
}

// backoff is an exponential delay between retries: 100ms doubling to 5s.
type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{} }

func (b *backoff) next() time.Duration {
	if b.d == 0 {
		b.d = 100 * time.Millisecond
	} else {
		b.d = min(2*b.d, 5*time.Second)
	}
	return b.d
}

func (b *backoff) reset() { b.d = 0 }
