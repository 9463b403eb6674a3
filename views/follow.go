package views

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// Func applies a batch of changes, in order, and returns how many items
// it wrote (reported in BatchInfo); next is the cursor after the batch,
// which a view that keeps its own cursor (Options.Checkpoint) commits
// with its writes. An error leaves the cursor where it was: the batch is
// read and applied again after a backoff. A change that can never be
// applied should be reported (Follower.Report) and skipped, not returned
// as an error, or the follower would retry it for ever.
type Func func(ctx context.Context, changes []store.Change, next store.FeedCursor) (written int, err error)

// Options configure a Follower.
type Options struct {
	// Consumer names the follower's durable cursor in the store.
	// Required. Followers in several processes sharing one store under
	// one name share the cursor (each applies what it reads, which is
	// harmless: applying is idempotent).
	Consumer string
	// Batch is the most changes read and applied at once; 0 means 512.
	Batch int
	// WithoutEntries reads the feed without the appended entries
	// (store.FeedRequest.WithoutEntries), for an apply function that
	// needs only the changed sessions.
	WithoutEntries bool
	// Poll is how long the follower waits, when the feed is quiet and
	// nothing notified it, before it looks again (for writes by other
	// processes); 0 means 250ms.
	Poll time.Duration
	// Settle is how long the follower lets writes gather after it is
	// notified of one, before it reads the feed: under a steady stream of
	// appends it then applies them in batches of many rather than one by
	// one. 0 means DefaultSettle; a negative value reads at once.
	Settle time.Duration
	// OnError, when set, receives failures: those of reading and applying,
	// retried with backoff (up to 5s), and those reported by the apply
	// function for changes it skipped.
	OnError func(err error)
	// OnDamaged, when set, is told of every damaged record (one whose
	// stored form does not decode) that the follower's reads, and those of
	// the apply function, left out (see agentmem.ReportDamaged); the
	// follower goes on without it.
	OnDamaged func(*agentmem.DamagedError)
	// OnBatch, when set, is told of every batch applied.
	OnBatch func(BatchInfo)
	// Checkpoint, when set, reads the cursor that the view keeps with
	// what it derives, ok false when it has none yet: the apply function
	// commits each batch's cursor (Func's next) in the transaction of the
	// batch's writes, so that a crash can neither lose the cursor of
	// writes committed nor move it past writes that were not, and the
	// follower resumes from it (from the cursor saved in the feed when
	// the view has none). The cursor saved in the feed is then only what
	// the view holds the feed back to (see store.Feed.SaveCursor).
	Checkpoint func(ctx context.Context) (c store.FeedCursor, ok bool, err error)
	// SaveEvery is how often, at most, the follower saves its cursor in
	// the feed, and it saves it when Run returns; 0 means
	// DefaultSaveEvery, and a negative value saves it after every batch.
	// A save is a durable write (an fsync, on SQLite), and saving after
	// every batch doubled the commits of a view that follows a steady
	// stream of appends. A process that crashes reads again, and applies
	// again, what it applied after the cursor saved last (applying is
	// idempotent); a view with a Checkpoint resumes from its own.
	SaveEvery time.Duration
}

// DefaultSaveEvery is Options.SaveEvery when it is 0.
const DefaultSaveEvery = time.Second

// DefaultSettle is Options.Settle when it is 0: a few milliseconds of lag
// for batches of all the appends made meanwhile.
const DefaultSettle = 20 * time.Millisecond

// BatchInfo describes a batch of changes a Follower applied.
type BatchInfo struct {
	// Changes is the number of changes in the batch and Written the
	// number of items the apply function wrote.
	Changes, Written int
	// Lags are, for each change, how long after it was committed it was
	// applied (by the store's clock against this process's).
	Lags []time.Duration
	// Took is how long applying the batch took.
	Took time.Duration
}

// Status is a Follower's progress.
type Status struct {
	// Running says that Run is following the feed.
	Running bool
	// Through is the feed watermark applied (see store.FeedResponse).
	Through int64
	// Cursor is the position after the last change applied.
	Cursor store.FeedCursor
	// Lag is how long the oldest change read but not yet applied has
	// waited; zero when the follower has caught up with what it read.
	Lag time.Duration
	// Applied counts the changes applied since the follower started,
	// Errors the failures.
	Applied, Errors int64
	// LastError is the newest failure's message, empty if none since
	// the last batch applied.
	LastError string
}

// Follower follows a store's feed. Run follows it until its context
// ends; Notify wakes it at once after a write (otherwise it polls, to see
// the writes of other processes sharing the store); Sync waits until
// everything committed before it is applied (read-your-writes). Its
// methods are safe for concurrent use.
type Follower struct {
	feed  store.Feed
	apply Func
	opts  Options

	notify chan struct{} // buffered: a pending wake-up
	urgent chan struct{} // buffered: a wake-up that skips the settling (Sync)
	// syncs counts the Syncs waiting: a wake-up on urgent counts only
	// while one waits (see wait).
	syncs atomic.Int32

	mu       sync.Mutex
	through  int64         // the feed watermark applied
	progress chan struct{} // closed and replaced when through moves
	behind   time.Time     // the time of the oldest change read but not yet applied
	status   Status
	watchers []func(BatchInfo)
}

// NewFollower returns a Follower that applies what feed reports with apply. It
// does nothing until Run.
func NewFollower(feed store.Feed, apply Func, opts Options) *Follower {
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
	if opts.SaveEvery == 0 {
		opts.SaveEvery = DefaultSaveEvery
	}
	return &Follower{feed: feed, apply: apply, opts: opts, notify: make(chan struct{}, 1), urgent: make(chan struct{}, 1), progress: make(chan struct{})}
}

// Observe adds fn to the functions told of every batch applied (after
// Options.OnBatch), such as a server's metrics.
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
func (f *Follower) Status() Status {
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
// has been applied, or ctx ends. Run must be running (in this process)
// for it to return nil.
func (f *Follower) Sync(ctx context.Context) error {
	head, err := f.feed.FeedHead(ctx)
	if err != nil {
		return err
	}
	f.syncs.Add(1)
	defer f.syncs.Add(-1)
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
			return fmt.Errorf("%s: waiting for the follower to reach the log: %w", f.opts.Consumer, ctx.Err())
		}
	}
}

// Run follows the feed until ctx ends (returning nil) or the store is
// closed (returning store.ErrClosed). Failures are reported to OnError
// and retried.
func (f *Follower) Run(ctx context.Context) error {
	if f.opts.OnDamaged != nil {
		ctx = agentmem.WithDamageReporter(ctx, f.opts.OnDamaged)
	}
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
		if err == nil && f.opts.Checkpoint != nil {
			// The view's own cursor is where its writes are; the feed's
			// may lag behind it (SaveEvery).
			var (
				own store.FeedCursor
				ok  bool
			)
			if own, ok, err = f.opts.Checkpoint(ctx); err == nil && ok {
				c = own
			}
		}
		if err == nil {
			cur = c
			break
		}
		if stop, err := f.failed(ctx, err, backoff); stop {
			return err
		}
	}
	// saved is the cursor saved in the feed last, at savedAt.
	saved, savedAt := cur, time.Now()
	save := func(ctx context.Context) {
		if cur == saved {
			return
		}
		// A cursor that fails to save only means reading again (and
		// applying again, harmlessly) what was applied after the one
		// saved, after a restart, and holding the feed back meanwhile.
		if err := f.feed.SaveCursor(ctx, f.opts.Consumer, cur); err != nil {
			// A closed store has nothing to save into: the next follower
			// reads again from the cursor saved last.
			if !errors.Is(err, context.Canceled) && !errors.Is(err, store.ErrClosed) {
				f.Report(fmt.Errorf("%s: saving the feed cursor: %w", f.opts.Consumer, err))
			}
			return
		}
		saved, savedAt = cur, time.Now()
	}
	defer func() {
		// What was applied is saved when the follower stops.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		save(sctx)
	}()
	f.mu.Lock()
	f.status.Cursor = cur
	f.mu.Unlock()
	timer := time.NewTimer(f.opts.Poll)
	defer timer.Stop()
	for {
		if ctx.Err() != nil {
			return nil
		}
		resp, err := f.feed.ReadFeed(ctx, store.FeedRequest{After: cur, Limit: f.opts.Batch, WithoutEntries: f.opts.WithoutEntries})
		if err == nil && len(resp.Changes) > 0 {
			f.markBehind(resp.Changes[0].Time)
			err = f.applyBatch(ctx, resp.Changes, resp.Next)
		}
		if err != nil {
			if stop, err := f.failed(ctx, err, backoff); stop {
				return err
			}
			continue
		}
		backoff.reset()
		cur = resp.Next
		if time.Since(savedAt) >= f.opts.SaveEvery {
			save(ctx)
		}
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
		if !f.wait(ctx, timer) {
			return nil
		}
	}
}

// wait waits, after a read that found nothing more, for a reason to read
// again: a notification (then for the writes that follow it to settle,
// unless a Sync waits), a Sync, or the poll timer. It reports false when
// ctx ends. A wake-up on urgent counts only while a Sync waits: one that
// found the follower caught up may have left it behind.
func (f *Follower) wait(ctx context.Context, timer *time.Timer) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-f.notify:
			if f.opts.Settle <= 0 || f.syncs.Load() > 0 {
				return true
			}
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			timer.Reset(f.opts.Settle)
			for {
				select {
				case <-ctx.Done():
					return false
				case <-timer.C:
					return true
				case <-f.urgent:
					if f.syncs.Load() > 0 {
						return true
					}
				}
			}
		case <-f.urgent:
			if f.syncs.Load() > 0 {
				return true
			}
		case <-timer.C:
			return true
		}
	}
}

// applyBatch applies a batch and tells the observers.
func (f *Follower) applyBatch(ctx context.Context, changes []store.Change, next store.FeedCursor) error {
	start := time.Now()
	written, err := f.apply(ctx, changes, next)
	if err != nil {
		return err
	}
	f.mu.Lock()
	watchers := f.watchers
	f.mu.Unlock()
	if f.opts.OnBatch != nil || len(watchers) > 0 {
		now := time.Now()
		info := BatchInfo{Changes: len(changes), Written: written, Took: now.Sub(start), Lags: make([]time.Duration, len(changes))}
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

// failed reports err and waits out the backoff; it says whether Run must
// stop (its context ended or the store is closed) and with what.
func (f *Follower) failed(ctx context.Context, err error, b *backoff) (bool, error) {
	switch {
	case ctx.Err() != nil:
		return true, nil
	case errors.Is(err, store.ErrClosed):
		return true, err
	}
	f.Report(err)
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

// Report counts a failure and passes it to Options.OnError: the apply
// function reports so a change it skips.
func (f *Follower) Report(err error) {
	f.mu.Lock()
	f.status.Errors++
	f.status.LastError = err.Error()
	f.mu.Unlock()
	if f.opts.OnError != nil {
		f.opts.OnError(err)
	}
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
