package recallview

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/views"
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
	*views.Follower
	st store.Store
	x  *Indexer
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

// DefaultSettle is FollowerOptions.Settle when it is 0.
const DefaultSettle = views.DefaultSettle

// NewFollower returns a Follower that indexes what feed reports about
// st's sessions into x. It does nothing until Run.
func NewFollower(feed store.Feed, st store.Store, x *Indexer, opts FollowerOptions) *Follower {
	if opts.Consumer == "" {
		opts.Consumer = DefaultConsumer
	}
	f := &Follower{st: st, x: x}
	f.Follower = views.NewFollower(feed, f.apply, opts)
	return f
}

// maxFlush bounds the documents written in one upsert.
const maxFlush = 1024

// apply indexes a batch of changes, in order: the documents of appended
// entries and forked histories are written together, per tenant, and a
// deletion drops the session's documents collected before it, then
// forgets the session.
func (f *Follower) apply(ctx context.Context, changes []store.Change) (int, error) {
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
			// rest stays collected (a flush here split a batch in two
			// at every deletion, and bench load's mixed traffic, with a
			// deletion every few dozen changes, kept the index seconds
			// behind).
			w.forget(c.Tenant, c.SessionID)
			if _, err := f.x.Forget(ctx, &store.Session{ID: c.SessionID, Tenant: c.Tenant}); err != nil {
				return 0, err
			}
		}
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
