// Package autocompact is the sessions' automatic compaction as a view of
// the log: it follows the store's change feed (package views) and
// compacts, in the background, the sessions whose settings ask for it.
package autocompact

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/views"
)

// Consumer is the name of the automatic compaction's cursor in the
// store's feed.
const Consumer = "auto-compact"

// Settle is the Compactor's views.Options.Settle when it is 0: how long
// it lets appends gather before it reads them. A compaction is on no
// request's path and waits for a summarizer anyway. Reading the feed
// about once a second under a stream of appends costs the server little;
// the follower's default of a few milliseconds would not.
const Settle = time.Second

// Compactor compacts, in the background, the sessions whose settings ask
// for it (store.Session.AutoCompact). It follows the store's change feed
// (package views). After appends to such a session, if its working set
// costs more than AutoCompact.MaxTokens, it summarizes the oldest whole
// turns down to AutoCompact.TargetTokens. A Policy does the same for a
// memory in a process (agentmem.Policy, agentmem.Memory.ApplyPolicy); see
// sessions.Service.AutoCompact.
//
// Nothing of this is on a request's path: an append is acknowledged once
// it is stored, and the summarizer (an LLM call, perhaps) runs later. The
// compaction is an ordinary compaction entry, appended only if the log is
// still where the compactor read it (a bound memory's journal). So a
// concurrent append is never lost: the compactor reads the session again
// and tries again, within the service's retry policy
// (sessions.Service.Retry). An append after that is a change of its own
// that brings the compactor back. Its cursor is saved once a batch is
// done, so a compaction that a crash interrupted is done again by
// whichever process follows the feed next.
type Compactor struct {
	*views.Follower
	svc *sessions.Service
}

// New returns a Compactor of the service's sessions that follows feed
// (the store's) under opts (a zero Consumer is Consumer, a zero Settle
// Settle). It does nothing until Run; Start runs one for the service.
func New(svc *sessions.Service, feed store.Feed, opts views.Options) *Compactor {
	opts = opts.WithDefaults(Consumer, Settle)
	// It looks at the sessions appended to, not at what was appended.
	opts.WithoutEntries = true
	c := &Compactor{svc: svc}
	c.Follower = views.NewFollower(feed, c.apply, opts)
	return c
}

// Start runs a Compactor following feed, the change feed of the
// service's store (nil: the store's own, if it is a store.Feed), until
// the returned stop is called; the service's appends wake it
// (sessions.Service.NotifyWrites). Without a feed it returns nil and a
// stop that does nothing.
func Start(svc *sessions.Service, feed store.Feed, opts views.Options) (*Compactor, func()) {
	return views.StartFor(feed, svc.Store(), svc, func(feed store.Feed) *Compactor { return New(svc, feed, opts) })
}

// apply compacts the sessions with automatic compaction that a batch of
// changes appended to, each once. A failure that may pass (the store is
// busy, the summarizer is down, another writer kept winning) fails the
// batch, which is tried again; one that will not (a session that no
// longer decodes) is reported and skipped.
func (c *Compactor) apply(ctx context.Context, changes []store.Change, _ store.FeedCursor) (int, error) {
	seen := make(map[store.Key]bool)
	compacted := 0
	for _, ch := range changes {
		sess := ch.Session
		if ch.Kind != store.ChangeAppend || sess == nil || sess.AutoCompact == nil || seen[sess.Key()] {
			continue
		}
		seen[sess.Key()] = true
		done, err := c.svc.AutoCompact(ctx, sess)
		switch {
		case err == nil:
			if done {
				compacted++
			}
		case errors.Is(err, agentmem.ErrNotFound):
			// Deleted since: nothing to compact.
		case errors.Is(err, agentmem.ErrUnavailable), errors.Is(err, agentmem.ErrConflict), ctx.Err() != nil:
			return compacted, fmt.Errorf("auto-compact: session %q: %w", sess.ID, err)
		default:
			var se *sessions.SummarizerError
			if errors.As(err, &se) {
				return compacted, fmt.Errorf("auto-compact: session %q: %w", sess.ID, err)
			}
			c.Report(fmt.Errorf("auto-compact: skipping session %q: %w", sess.ID, err))
		}
	}
	return compacted, nil
}
