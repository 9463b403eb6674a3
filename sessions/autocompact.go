package sessions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/follow"
)

// CompactorConsumer is the name of the automatic compaction's cursor in
// the store's feed.
const CompactorConsumer = "auto-compact"

// Compactor compacts, in the background, the sessions whose settings ask
// for it (store.Session.AutoCompact): it follows the store's change feed
// (package follow), and after appends to such a session, if its working
// set costs more than AutoCompact.MaxTokens, it summarizes the oldest
// whole turns down to AutoCompact.TargetTokens, as a Policy does for a
// memory in a process (agentmem.Policy, agentmem.Memory.ApplyPolicy).
//
// Nothing of this is on a request's path: an append is acknowledged once
// it is stored, and the summarizer (an LLM call, perhaps) runs later. The
// compaction is an ordinary compaction entry, appended only if the log is
// still where the compactor read it (a bound memory's journal), so a
// concurrent append is never lost: the compactor reads the session again
// and tries again, within the service's retry policy (Service.Retry),
// and an append after that is a change of its own that brings the
// compactor back. Its cursor is saved once a batch is
// done, so a compaction that a crash interrupted is done again by
// whichever process follows the feed next.
type Compactor struct {
	*follow.Follower
	svc *Service
}

// CompactorSettle is the Compactor's follow.Options.Settle when it is 0:
// how long it lets appends gather before it reads them. A compaction is
// not on any request's path and waits for a summarizer anyway, so the
// compactor reads the feed and saves its cursor about once a second under
// a stream of appends, not every few milliseconds (the follower's
// default), which took 6% of a server's CPU under the agent loop of
// agentmem-bench load.
const CompactorSettle = time.Second

// NewCompactor returns a Compactor of the service's sessions that follows
// feed (the store's) under opts (a zero Consumer is CompactorConsumer, a
// zero Settle CompactorSettle). It does nothing until Run; StartCompactor
// runs one for the service.
func (s *Service) NewCompactor(feed store.Feed, opts follow.Options) *Compactor {
	if opts.Consumer == "" {
		opts.Consumer = CompactorConsumer
	}
	if opts.Settle == 0 {
		opts.Settle = CompactorSettle
	}
	// It looks at the sessions appended to, not at what was appended.
	opts.WithoutEntries = true
	c := &Compactor{svc: s}
	c.Follower = follow.New(feed, c.apply, opts)
	return c
}

// StartCompactor runs a Compactor following feed, the change feed of the
// service's store (nil: the store's own, if it is a store.Feed), until
// the returned stop is called; the service's appends wake it. Without a
// feed it returns nil and a stop that does nothing.
func (s *Service) StartCompactor(feed store.Feed, opts follow.Options) (*Compactor, func()) {
	if feed == nil {
		f, ok := s.st.(store.Feed)
		if !ok {
			return nil, func() {}
		}
		feed = f
	}
	c := s.NewCompactor(feed, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(ctx) // failures went to opts.OnError
	}()
	s.compactor.Store(c)
	var once sync.Once
	return c, func() {
		once.Do(func() {
			s.compactor.CompareAndSwap(c, nil)
			cancel()
			<-done
		})
	}
}

// wake tells the running compactor, if any, that a session was appended
// to.
func (s *Service) wake() {
	if c := s.compactor.Load(); c != nil {
		c.Notify()
	}
}

// apply compacts the sessions with automatic compaction that a batch of
// changes appended to, each once. A failure that may pass (the store is
// busy, the summarizer is down, another writer kept winning) fails the
// batch, which is tried again; one that will not (a session that no
// longer decodes) is reported and skipped.
func (c *Compactor) apply(ctx context.Context, changes []store.Change) (int, error) {
	seen := make(map[store.Key]bool)
	compacted := 0
	for _, ch := range changes {
		sess := ch.Session
		if ch.Kind != store.ChangeAppend || sess == nil || sess.AutoCompact == nil || seen[sess.Key()] {
			continue
		}
		seen[sess.Key()] = true
		done, err := c.svc.autoCompact(ctx, sess)
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
			var se *SummarizerError
			if errors.As(err, &se) {
				return compacted, fmt.Errorf("auto-compact: session %q: %w", sess.ID, err)
			}
			c.Report(fmt.Errorf("auto-compact: skipping session %q: %w", sess.ID, err))
		}
	}
	return compacted, nil
}

// autoCompact compacts a session if its working set costs more than its
// AutoCompact.MaxTokens, and reports whether it did.
func (s *Service) autoCompact(ctx context.Context, sess *store.Session) (bool, error) {
	ac := sess.AutoCompact.WithDefaults(s.defaultSummarizer())
	// What the working set costs now, from the context cache: a lookup
	// of the counts of its steps, rendered once.
	st, err := s.cache.get(ctx, sess.Tenant, sess.ID, s.defaultForm())
	if err != nil {
		return false, err
	}
	if st.mem.Tokens() <= ac.MaxTokens {
		return false, nil
	}
	sum, err := s.summarizer(ac.Summarizer)
	if err != nil {
		return false, err
	}
	// The summary takes at most a quarter of the target, so that the
	// turns kept have the rest.
	opts := agentmem.SummarizeOptions{KeepRecent: ac.KeepRecent, MaxSummaryTokens: max(ac.TargetTokens/4, 1)}
	policy := &agentmem.Policy{MaxTokens: ac.MaxTokens, TargetTokens: ac.TargetTokens, Strategy: agentmem.Summarize(sum, opts)}
	pin := sess.EffectivePinning()
	changed := false
	err = s.compactRetry(sess.Tenant, sess.ID, sum).Do(ctx, "auto_compact", func(int) error {
		b, err := store.OpenTenantMemory(ctx, s.st, sess.Tenant, sess.ID, agentmem.Options{Counter: s.counter, Clock: s.clock, Pinning: &pin, Policy: policy})
		if err != nil {
			return err
		}
		comp, err := b.ApplyPolicy(ctx)
		if err == nil {
			changed = comp.Changed()
		}
		return err
	})
	return changed, err
}
