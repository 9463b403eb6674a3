package recall

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// IndexedStore is a store.Store that keeps conversation recall in step
// with what it stores: every step appended through it is indexed (see
// StepDocs), a branch it creates is indexed with the history it inherits,
// and a session it deletes is forgotten. Wrap the store a server or an
// agent writes through, and every turn of every session becomes
// searchable across sessions (Scope) with no other call.
//
// The store stays the truth and the index is derived from it: indexing
// happens after the store has acknowledged a write, and a failure to index
// does not fail the write; it is reported to OnError, and Indexer.Backfill
// repairs the index (it is idempotent). Indexing is synchronous, so a
// search made after a write returns sees it.
//
// Sessions that expire are forgotten when Prune through it deletes them
// (the retention loop of agentmem serve prunes through it).
type IndexedStore struct {
	store.Store
	// Indexer indexes into its Index; its Store should be the wrapped
	// store, for Backfill.
	Indexer *Indexer
	// OnError, when set, receives indexing failures; nil drops them.
	OnError func(ctx context.Context, sessionID string, err error)
}

// NewIndexedStore wraps st so that x indexes what is written through it.
func NewIndexedStore(st store.Store, x *Indexer) *IndexedStore {
	return &IndexedStore{Store: st, Indexer: x}
}

var _ store.Store = (*IndexedStore)(nil)

// Create creates a session; a branch is indexed with the history it
// inherits, as Indexer.Backfill would index it.
func (s *IndexedStore) Create(ctx context.Context, req store.CreateRequest) (*store.Session, error) {
	sess, err := s.Store.Create(ctx, req)
	if err != nil || sess.ParentID == "" {
		return sess, err
	}
	resp, rerr := s.Store.Read(ctx, store.ReadRequest{SessionID: sess.ID})
	if rerr == nil {
		rerr = s.Indexer.Add(ctx, resp.Session, resp.Entries...)
	}
	s.report(ctx, sess.ID, rerr)
	return sess, nil
}

// Append appends to a session's log, then indexes the steps it stored.
// Retried steps (already stored) are indexed again, harmlessly: indexing
// is an upsert by step.
func (s *IndexedStore) Append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	resp, err := s.Store.Append(ctx, req)
	if err != nil || len(req.Steps) == 0 {
		return resp, err
	}
	sess, gerr := s.Store.Get(ctx, req.SessionID)
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
	s.report(ctx, sess.ID, s.Indexer.Add(ctx, sess, entries...))
	return resp, nil
}

// Delete deletes a session and forgets its documents. An expired
// session (which Get no longer returns) is deleted, but its documents are
// not found to forget: see the type's documentation.
func (s *IndexedStore) Delete(ctx context.Context, id string) error {
	sess, gerr := s.Store.Get(ctx, id)
	if err := s.Store.Delete(ctx, id); err != nil {
		return err
	}
	if gerr == nil {
		_, gerr = s.Indexer.Forget(ctx, sess)
	} else if errors.Is(gerr, agentmem.ErrNotFound) {
		gerr = nil
	}
	s.report(ctx, id, gerr)
	return nil
}

// Prune applies retention and forgets the documents of the expired
// sessions it deleted, so that what a session's retention removes is not
// found by recall either. A failure to forget is reported to OnError, not
// returned: the sessions are deleted.
func (s *IndexedStore) Prune(ctx context.Context, req store.PruneRequest) (*store.PruneResponse, error) {
	resp, err := s.Store.Prune(ctx, req)
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
	s.report(ctx, sess.ID, s.Indexer.Add(ctx, sess, entries...))
	return nil
}
