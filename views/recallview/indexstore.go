package recallview

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// IndexedStore is a store.Store that keeps conversation recall in step
// with what it stores: every step appended to any session becomes a
// document (see StepDocs), a branch's inherited history is found through
// its lineage (Options.Lineage; without it, indexed again as the
// branch's), and a deleted session is forgotten. Wrap the store a server or
// an agent writes through, and every turn of every session becomes
// searchable across sessions (Scope) with no other call.
//
// The store stays the truth and the index is derived from it. When the
// wrapped store has a change feed (store.Feed: every backend does), a
// Follower indexes the feed in the background, so writes never wait on
// the index and no acknowledged write can be left unindexed: after a
// crash or a restart the follower resumes at its durable cursor. A search
// made right after a write sees it once Sync returns. Start starts the
// follower (the first write through the store does too), and Close stops
// it. A deleted session is also forgotten at once, not only when the
// follower reaches its deletion.
//
// Over a store without a feed (such as the HTTP client), indexing happens
// after each write instead, synchronously; a failure to index does not
// fail the write: it is reported to OnError, and Indexer.Backfill
// repairs the index.
type IndexedStore struct {
	store.Store
	// Indexer indexes into its Index; its Store should be the wrapped
	// store, for Backfill.
	Indexer *Indexer
	// OnError, when set, receives indexing failures; nil drops them. Set
	// it before Start.
	OnError func(ctx context.Context, sessionID string, err error)
	// Follow configures the follower; set it before Start. Its OnError
	// defaults to OnError.
	Follow FollowerOptions

	feed      store.Feed
	startOnce sync.Once
	follower  *Follower
	stop      context.CancelFunc
	done      chan struct{}
}

// NewIndexedStore wraps st so that x indexes what is written to it.
func NewIndexedStore(st store.Store, x *Indexer) *IndexedStore {
	s := &IndexedStore{Store: st, Indexer: x}
	s.feed, _ = st.(store.Feed)
	return s
}

var _ store.Store = (*IndexedStore)(nil)

// Start starts following the store's change feed in the background, if
// it has one; it does nothing the second time. Writes through the
// IndexedStore start it too, but a process that only reads (while others
// write to a shared store) must call it.
func (s *IndexedStore) Start() {
	if s.feed == nil {
		return
	}
	s.startOnce.Do(func() {
		opts := s.Follow
		if opts.OnError == nil {
			opts.OnError = func(err error) { s.report(context.Background(), "", err) }
		}
		s.follower = NewFollower(s.feed, s.Store, s.Indexer, opts)
		ctx, cancel := context.WithCancel(context.Background())
		s.stop, s.done = cancel, make(chan struct{})
		go func() {
			defer close(s.done)
			_ = s.follower.Run(ctx) // failures went to OnError
		}()
	})
}

// Follower returns the follower of the store's feed, nil before Start or
// over a store without a feed.
func (s *IndexedStore) Follower() *Follower {
	if s.feed == nil {
		return nil
	}
	s.Start()
	return s.follower
}

// Sync waits until every write to the store committed before the call is
// indexed (read-your-writes), or ctx ends. Over a store without a feed
// it returns at once: indexing happened with each write.
func (s *IndexedStore) Sync(ctx context.Context) error {
	if s.feed == nil {
		return nil
	}
	s.Start()
	return s.follower.Sync(ctx)
}

// Stop stops the follower, waiting for the batch it is indexing; the
// store stays open. A later write does not start it again.
func (s *IndexedStore) Stop() {
	s.startOnce.Do(func() {}) // never start after Stop
	if s.stop != nil {
		s.stop()
		<-s.done
	}
}

// Close stops the follower, then closes the wrapped store.
func (s *IndexedStore) Close() error {
	s.Stop()
	return s.Store.Close()
}

// wrote wakes the follower after a write.
func (s *IndexedStore) wrote() {
	s.Start()
	s.follower.Notify()
}

// ReadFeed, FeedHead, LoadCursor and SaveCursor implement store.Feed by
// the wrapped store's feed; without one they fail with
// errors.ErrUnsupported.
func (s *IndexedStore) ReadFeed(ctx context.Context, req store.FeedRequest) (*store.FeedResponse, error) {
	if s.feed == nil {
		return nil, errNoFeed(s.Store)
	}
	return s.feed.ReadFeed(ctx, req)
}

// FeedHead implements store.Feed (see ReadFeed).
func (s *IndexedStore) FeedHead(ctx context.Context) (int64, error) {
	if s.feed == nil {
		return 0, errNoFeed(s.Store)
	}
	return s.feed.FeedHead(ctx)
}

// LoadCursor implements store.Feed (see ReadFeed).
func (s *IndexedStore) LoadCursor(ctx context.Context, consumer string) (store.FeedCursor, error) {
	if s.feed == nil {
		return store.FeedCursor{}, errNoFeed(s.Store)
	}
	return s.feed.LoadCursor(ctx, consumer)
}

// SaveCursor implements store.Feed (see ReadFeed).
func (s *IndexedStore) SaveCursor(ctx context.Context, consumer string, c store.FeedCursor) error {
	if s.feed == nil {
		return errNoFeed(s.Store)
	}
	return s.feed.SaveCursor(ctx, consumer, c)
}

// DropCursor implements store.Feed (see ReadFeed).
func (s *IndexedStore) DropCursor(ctx context.Context, consumer string) error {
	if s.feed == nil {
		return errNoFeed(s.Store)
	}
	return s.feed.DropCursor(ctx, consumer)
}

func errNoFeed(st store.Store) error {
	return fmt.Errorf("recall: %T has no change feed: %w", st, errors.ErrUnsupported)
}

// Create creates a session; a branch is indexed with the history it
// inherits, as Indexer.Backfill would index it: by the follower, with a
// feed, unless the index finds that history through the branch's
// lineage (Options.Lineage); without a feed always (the copies are what
// the branch is found with once its parent is deleted, which a store
// without a feed does not report).
func (s *IndexedStore) Create(ctx context.Context, req store.CreateRequest) (*store.Session, error) {
	sess, err := s.Store.Create(ctx, req)
	if err != nil || sess.ParentID == "" {
		return sess, err
	}
	if s.feed != nil {
		s.wrote()
		return sess, nil
	}
	resp, rerr := s.Store.Read(ctx, store.ReadRequest{Tenant: sess.Tenant, SessionID: sess.ID})
	if rerr == nil {
		rerr = s.Indexer.Add(ctx, resp.Session, resp.Entries...)
	}
	s.report(ctx, sess.ID, rerr)
	return sess, nil
}

// Append appends to a session's log. With a feed it wakes the follower,
// which indexes what was stored; without one it indexes the steps itself,
// and an amendment's copies (retried steps, already stored, again,
// harmlessly: indexing is an upsert by step).
func (s *IndexedStore) Append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	resp, err := s.Store.Append(ctx, req)
	amend := req.Compaction != nil && req.Compaction.Amend
	if err != nil || (len(req.Steps) == 0 && !amend) {
		return resp, err
	}
	if s.feed != nil {
		s.wrote()
		return resp, nil
	}
	sess, gerr := s.Store.Get(ctx, req.Tenant, req.SessionID)
	if gerr != nil {
		s.report(ctx, req.SessionID, gerr)
		return resp, nil
	}
	now := time.Now()
	entries := make([]store.Entry, 0, len(req.Steps))
	for i, st := range req.Steps {
		if i >= len(resp.Seqs) {
			break
		}
		entries = append(entries, store.Entry{Seq: resp.Seqs[i], Kind: store.StepEntry, Step: st, Time: now})
	}
	if amend && resp.CompactionSeq > 0 {
		// An amendment's copies stand in for the steps they amend.
		entries = append(entries, store.Entry{Seq: resp.CompactionSeq, Kind: store.CompactionEntry, Compaction: req.Compaction, Time: now})
	}
	s.report(ctx, sess.ID, s.Indexer.Add(ctx, sess, entries...))
	return resp, nil
}

// Delete deletes a session and forgets its documents. An expired
// session (which Get no longer returns) is deleted, but its documents are
// not found to forget: see the type's documentation.
func (s *IndexedStore) Delete(ctx context.Context, tenant, id string) error {
	sess, gerr := s.Store.Get(ctx, tenant, id)
	if err := s.Store.Delete(ctx, tenant, id); err != nil {
		return err
	}
	if gerr == nil {
		_, gerr = s.Indexer.Forget(ctx, sess)
	} else if errors.Is(gerr, agentmem.ErrNotFound) {
		gerr = nil
	}
	s.report(ctx, id, gerr)
	if s.feed != nil {
		s.wrote()
	}
	return nil
}

// Prune applies retention and forgets the documents of the expired
// sessions it deleted, so that what a session's retention removes is not
// found by recall either. A failure to forget is reported to OnError, not
// returned: the sessions are deleted.
func (s *IndexedStore) Prune(ctx context.Context, req store.PruneRequest) (*store.PruneResponse, error) {
	resp, err := s.Store.Prune(ctx, req)
	if resp != nil && s.feed != nil && len(resp.Deleted) > 0 {
		s.wrote()
	}
	if resp != nil {
		for i := range resp.Deleted {
			_, ferr := s.Indexer.Forget(ctx, &resp.Deleted[i])
			s.report(ctx, resp.Deleted[i].ID, ferr)
		}
	}
	return resp, err
}

// Unwrap returns the wrapped store.
func (s *IndexedStore) Unwrap() store.Store { return s.Store }

// report hands an indexing failure to OnError.
func (s *IndexedStore) report(ctx context.Context, sessionID string, err error) {
	if err != nil && s.OnError != nil {
		s.OnError(ctx, sessionID, fmt.Errorf("recall: indexing session %q: %w", sessionID, err))
	}
}

// Ping checks that the wrapped store's backend is reachable, when the
// wrapped store can (a Ping method); otherwise it succeeds.
func (s *IndexedStore) Ping(ctx context.Context) error {
	if p, ok := s.Store.(interface{ Ping(context.Context) error }); ok {
		return p.Ping(ctx)
	}
	_, err := s.Store.List(ctx, store.ListRequest{PageSize: 1})
	return err
}

// ImportEntries implements store.Importer when the wrapped store does
// (every backend does), and indexes the imported session's log, so that
// sessions restored with store.Import are searchable at once.
func (s *IndexedStore) ImportEntries(ctx context.Context, sess *store.Session, entries []store.Entry) error {
	imp, ok := s.Store.(store.Importer)
	if !ok {
		return fmt.Errorf("recall: %T does not implement store.Importer: %w", s.Store, errors.ErrUnsupported)
	}
	if err := imp.ImportEntries(ctx, sess, entries); err != nil {
		return err
	}
	if s.feed != nil {
		s.wrote()
		return nil
	}
	s.report(ctx, sess.ID, s.Indexer.Add(ctx, sess, entries...))
	return nil
}
