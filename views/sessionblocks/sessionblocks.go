// Package sessionblocks deletes the memory blocks of deleted sessions as a
// view of the log. It follows the store's change feed (package views).
// Every deletion of a session there (store.ChangeDelete: by Delete, or by
// Prune when the session expired) has the session's blocks deleted
// (sessions.Service.CleanBlocks).
package sessionblocks

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/views"
)

// Consumer is the name of the cleaner's cursor in the store's feed.
const Consumer = "session-blocks"

// Cleaner deletes, in the background, the memory blocks of the sessions
// deleted from the store. The blocks live in a store of their own, which
// the session store's deletion cannot reach in its transaction.
// sessions.Service.Delete deletes a session's blocks once the session is
// gone. But retention (store.Store.Prune) deletes expired sessions in the
// store alone, and a process can stop between a session's deletion and
// its blocks'.
//
// The deletion is in the store's feed either way. So a cleaner that
// follows the feed deletes the blocks after every deletion, whoever made
// it and whenever the process doing it stopped. Its cursor is saved once
// a batch is done. A batch a crash interrupted is applied again by
// whichever process follows the feed next, which deletes nothing more.
type Cleaner struct {
	*views.Follower
	svc *sessions.Service
}

// New returns a Cleaner of the service's blocks that follows feed (the
// store's) under opts (a zero Consumer is Consumer). It does nothing
// until Run; Start runs one for the service.
func New(svc *sessions.Service, feed store.Feed, opts views.Options) *Cleaner {
	opts = opts.WithDefaults(Consumer, 0)
	// It looks at the sessions deleted, not at what was appended.
	opts.WithoutEntries = true
	c := &Cleaner{svc: svc}
	c.Follower = views.NewFollower(feed, c.apply, opts)
	return c
}

// Start runs a Cleaner following feed, the change feed of the service's
// store (nil: the store's own, if it is a store.Feed), until the returned
// stop is called. Nothing wakes it: it polls the feed (Options.Poll),
// since the deletions that need it (Prune, another process) are not the
// service's, whose Delete deletes the blocks itself. Without a feed, or on
// a service without memory blocks, it returns nil and a stop that does
// nothing.
func Start(svc *sessions.Service, feed store.Feed, opts views.Options) (*Cleaner, func()) {
	if !svc.Features().Blocks {
		return nil, func() {}
	}
	return views.StartFor(feed, svc.Store(), nil, func(feed store.Feed) *Cleaner { return New(svc, feed, opts) })
}

// apply deletes the blocks of the sessions a batch of changes deleted, in
// order. A failure that may pass (a store that is busy or unreachable, a
// block that changed while it was deleted) fails the batch, which is
// tried again; one that will not is reported and skipped.
func (c *Cleaner) apply(ctx context.Context, changes []store.Change, _ store.FeedCursor) (int, error) {
	deleted := 0
	for _, ch := range changes {
		if ch.Kind != store.ChangeDelete {
			continue
		}
		n, err := c.svc.CleanBlocks(ctx, ch.Tenant, ch.SessionID)
		deleted += n
		switch {
		case err == nil:
		case errors.Is(err, agentmem.ErrUnavailable), ctx.Err() != nil:
			return deleted, fmt.Errorf("session blocks: deleted session %q: %w", ch.SessionID, err)
		default:
			c.Report(fmt.Errorf("session blocks: skipping the blocks of deleted session %q: %w", ch.SessionID, err))
		}
	}
	return deleted, nil
}
