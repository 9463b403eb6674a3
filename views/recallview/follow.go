package recallview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/views"
)

// Follower keeps conversation recall in step with a store's log by
// following the store's change feed (store.Feed) in the background. It
// reads the changes after its durable cursor in batches. It indexes the
// entries appended (StepDocs): steps, and the copies of amendments, such
// as an action completed by a tool result appended later. It indexes the
// history a branch inherits, unless the index resolves branches' lineage
// (see Options.Lineage). It forgets deleted sessions.
//
// Nothing is indexed on a request's path. A client that goes away after
// its append is acknowledged, or a process that crashes right after
// committing, thus cannot leave a turn unsearchable: whichever process
// follows the feed next resumes at the saved cursor.
//
// When the index's backend writes batches (recall.BatchWriter: every
// backend of this module), a batch commits in one transaction of the
// index: its documents, its deletions and the cursor after it (a
// checkpoint named after the consumer). The follower resumes from that
// cursor. A crash can thus neither index a batch twice nor lose its
// cursor, and a batch costs one commit. Over another backend the documents are
// upserted per tenant and the cursor is saved in the store's feed; a
// batch read again after a crash is indexed again, which does no harm
// (an upsert by step).
//
// Run follows the feed until its context ends; Notify wakes it at once
// after a write (otherwise it polls, to see the writes of other processes
// sharing the store); Sync waits until everything committed before it is
// indexed (read-your-writes). Its methods are safe for concurrent use.
type Follower struct {
	*views.Follower
	st       *store.Store
	x        *Indexer
	consumer string
	// batches: the index writes batches, and keeps the cursor.
	batches bool
}

// FollowerOptions configure a Follower (views.Options). The zero value
// is a good default: the cursor is named DefaultConsumer. A change that
// can never be indexed (a corrupt entry, a document the index refuses)
// is reported to OnError and skipped.
type FollowerOptions = views.Options

// BatchInfo describes a batch of changes a Follower applied: Written is
// the number of documents it wrote.
type BatchInfo = views.BatchInfo

// FollowStatus is a Follower's progress.
type FollowStatus = views.Status

// DefaultConsumer is the cursor name of a Follower's zero Options.
const DefaultConsumer = "recall"

// DefaultSettle is FollowerOptions.Settle when it is 0. A search without
// Sync finds a turn a few hundred milliseconds after its append. A batch
// of the index costs much more than its documents. A SQLite commit
// writes every page the batch touched, and the document frequencies of a
// batch's terms touch most of their table whatever the batch's size. A
// turn cost about 600 µs of CPU in batches of 16, 400 in batches of 64
// and 280 in batches of 256 (BenchmarkIndexBatchSize). Under a steady
// stream of agent loops, 20 ms of settling made batches of about 20
// turns, and the index took the largest part of the server's CPU.
const DefaultSettle = 200 * time.Millisecond

// NewFollower returns a Follower that indexes what feed reports about
// st's sessions into x. It does nothing until Run. Unless opts has a
// Checkpoint of its own, the follower keeps its cursor in the index when
// the index's backend is a recall.BatchWriter.
func NewFollower(feed store.Feed, st *store.Store, x *Indexer, opts FollowerOptions) *Follower {
	opts = opts.WithDefaults(DefaultConsumer, DefaultSettle)
	f := &Follower{st: st, x: x, consumer: opts.Consumer}
	if _, ok := x.Index.Backend().(recall.BatchWriter); ok && opts.Checkpoint == nil {
		f.batches = true
		opts.Checkpoint = f.checkpoint
	}
	f.Follower = views.NewFollower(feed, f.apply, opts)
	return f
}

// Start runs a Follower that indexes what feed reports about st's
// sessions into x, in the background, until the returned stop is called
// (stop waits for the batch being indexed and may be called more than
// once). The follower polls the feed; wake it at once after a write with
// Notify, as a sessions.Service's NotifyWrites does for the writes made
// through it.
func Start(feed store.Feed, st *store.Store, x *Indexer, opts FollowerOptions) (*Follower, func()) {
	f := NewFollower(feed, st, x, opts)
	return f, views.Start(f, nil)
}

// checkpoint reads the cursor the index keeps with the documents.
func (f *Follower) checkpoint(ctx context.Context) (store.FeedCursor, bool, error) {
	v, ok, err := f.x.Index.Checkpoint(ctx, f.consumer)
	if errors.Is(err, recall.ErrClosed) {
		// Nothing can be indexed: the follower starts from the feed's
		// cursor, and every batch it reads fails (reported, and retried)
		// as it would have.
		return store.FeedCursor{}, false, nil
	}
	if err != nil || !ok {
		return store.FeedCursor{}, false, err
	}
	var c store.FeedCursor
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		return store.FeedCursor{}, false, fmt.Errorf("recall: the index's cursor %q does not decode: %w", v, err)
	}
	return c, true, nil
}

// maxFlush bounds the documents written in one upsert, without batches.
const maxFlush = 1024

// apply indexes a batch of changes, in order: the documents of appended
// entries and forked histories are written together, per tenant, and a
// deletion drops the session's documents collected before it, then
// forgets the session. With batches it all commits in one transaction
// with next, the cursor after the changes.
func (f *Follower) apply(ctx context.Context, changes []store.Change, next store.FeedCursor) (int, error) {
	w := &docWriter{ctx: ctx, f: f}
	for _, c := range changes {
		switch c.Kind {
		case store.ChangeAppend:
			if c.Err != nil {
				f.Report(fmt.Errorf("recall: skipping entry %d of session %q: %w", c.Seq, c.SessionID, c.Err))
				continue
			}
			if c.Session == nil || c.Entry == nil {
				continue // gone since: nothing to index
			}
			if err := w.add(StepDocs(c.Session, *c.Entry)); err != nil {
				return 0, err
			}
		case store.ChangeFork:
			if c.Session == nil || f.x.lineage() {
				continue // gone, or found through its lineage
			}
			if err := f.forked(ctx, w, c.Session, c.Seq); err != nil {
				return 0, err
			}
		case store.ChangeDelete:
			// The session's documents collected so far would be written
			// only to be forgotten: they are dropped instead, and the
			// rest stays collected. A flush here would split a batch at
			// every deletion, and traffic that mixes deletions with
			// appends would keep the index behind.
			w.forget(c.Tenant, c.SessionID)
			if f.batches {
				w.clear(c.Tenant, c.SessionID)
			} else if _, err := f.x.Forget(ctx, &store.Session{ID: c.SessionID, Tenant: c.Tenant}); err != nil {
				return 0, err
			}
		}
	}
	if f.batches {
		return w.commit(next)
	}
	if err := w.flush(); err != nil {
		return 0, err
	}
	return w.written, nil
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
// made from the later log entry (EntrySeq) is kept. Two cases need it.
// A deleted parent hands a branch the history the branch inherited, so a
// step's entry comes after its amendments when the branch amended that
// step already (a tool's result for a call its parent left pending). And
// an index that follows the log again from an older cursor, or was
// backfilled, holds documents newer than the entries it reads again.
type docWriter struct {
	ctx     context.Context
	f       *Follower
	tenants []string           // in the order first seen
	sets    map[string]*docSet // by tenant
	n       int
	written int
	// clears are the deletions of a batch (Follower.batches), and
	// cleared their sessions, by tenant.
	clears  []recall.Clear
	cleared map[string]map[string]bool
}

func (w *docWriter) add(docs []recall.Doc) error {
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
		if i, ok := set.at[d.ID]; ok && recall.EntrySeq(&set.docs[i]) > recall.EntrySeq(&d) {
			continue
		}
		before := len(set.docs)
		set.add(d)
		w.n += len(set.docs) - before
	}
	if w.n >= maxFlush && !w.f.batches {
		return w.flush()
	}
	return nil
}

// clear adds the deletion of a tenant's session's documents to the
// batch.
func (w *docWriter) clear(tenant, session string) {
	w.clears = append(w.clears, recall.Clear{Tenant: tenant, Filter: recall.Filter{Metadata: map[string]string{recall.MetaSession: session}}})
	if w.cleared == nil {
		w.cleared = map[string]map[string]bool{}
	}
	if w.cleared[tenant] == nil {
		w.cleared[tenant] = map[string]bool{}
	}
	w.cleared[tenant][session] = true
}

// commit writes what the batch collected, its deletions first, and the
// cursor after it, in one transaction of the index. A document the
// index refuses as invalid is reported and skipped, so that one bad
// document cannot stop the feed.
func (w *docWriter) commit(next store.FeedCursor) (int, error) {
	cursor, err := json.Marshal(next)
	if err != nil {
		return 0, err
	}
	b := recall.Batch{Clears: w.clears, Checkpoint: &recall.Checkpoint{Name: w.f.consumer, Value: string(cursor)}}
	for _, t := range w.tenants {
		docs, err := w.newer(t, w.sets[t].docs)
		if err != nil {
			return 0, err
		}
		for _, d := range docs {
			if _, err := recall.CheckDoc(d); err != nil {
				w.f.Report(fmt.Errorf("recall: skipping document %q: %w", d.ID, err))
				continue
			}
			b.Upserts = append(b.Upserts, d)
		}
	}
	if err := w.f.x.Index.WriteBatch(w.ctx, b); err != nil {
		return 0, err
	}
	return len(b.Upserts), nil
}

// forget drops the documents collected of a tenant's session (those
// whose MetaSession is session), which Indexer.Forget removes from the
// index.
func (w *docWriter) forget(tenant, session string) {
	set := w.sets[tenant]
	if set == nil {
		return
	}
	kept := slices.DeleteFunc(set.docs, func(d recall.Doc) bool { return d.Metadata[recall.MetaSession] == session })
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
func (w *docWriter) newer(tenant string, docs []recall.Doc) ([]recall.Doc, error) {
	ids := make([]string, 0, len(docs))
	for i := range docs {
		if recall.CheckID(docs[i].ID) == nil { // Upsert reports the others
			ids = append(ids, docs[i].ID)
		}
	}
	have, err := w.f.x.Index.Backend().Get(w.ctx, tenant, ids...)
	if err != nil || len(have) == 0 {
		return docs, err
	}
	held := make(map[string]int64, len(have))
	for i := range have {
		if w.cleared[tenant][have[i].Metadata[recall.MetaSession]] {
			continue // the batch deletes it before it writes docs
		}
		held[have[i].ID] = recall.EntrySeq(&have[i])
	}
	return slices.DeleteFunc(docs, func(d recall.Doc) bool {
		seq, ok := held[d.ID]
		return ok && seq > recall.EntrySeq(&d)
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
					w.f.Report(fmt.Errorf("recall: skipping document %q: %w", d.ID, e))
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
