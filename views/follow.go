package views

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"
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
	// one name share the cursor: each applies what it reads, which is
	// harmless when applying is idempotent, unless they are Exclusive.
	Consumer string
	// Exclusive makes the follower the only one of its consumer, in
	// every process sharing the store, that applies changes. It is for a
	// view whose effects must not be applied once per process: fact
	// extraction asks a model about every turn. The follower
	// applies changes only while it holds the consumer's lease
	// (store.Leaser); Run fails at once when the feed has none. It takes
	// the lease before it reads and renews it every third of LeaseTTL.
	// It saves its cursor only while the store says it holds the lease
	// (store.Leaser.SaveLeasedCursor). It stops applying, cancelling the
	// batch in flight, as soon as it cannot show that it still holds the
	// lease: a renewal was refused, or none was acknowledged within nine
	// tenths of LeaseTTL of being sent. It releases the lease when Run
	// returns.
	// The other followers wait, trying to take the lease every
	// LeasePoll, and one of them takes over when it is released or
	// expires, from the cursor saved: nothing is skipped. What the old
	// holder applied after the cursor it saved last (it crashed, or lost
	// the lease, before saving) is applied again by the next: at most
	// the batch in flight, with SaveEvery negative.
	Exclusive bool
	// LeaseTTL is how long an Exclusive follower's lease lasts without a
	// renewal, and so how long a holder that crashed keeps the others
	// waiting; 0 means DefaultLeaseTTL. Between store.MinLeaseTTL and
	// store.MaxLeaseTTL.
	LeaseTTL time.Duration
	// LeasePoll is how often an Exclusive follower that waits for the
	// lease tries to take it; 0 means a third of LeaseTTL.
	LeasePoll time.Duration
	// Holder names an Exclusive follower in its lease (see
	// store.LeaseRequest); empty means the host's name, the process ID
	// and a random part, which is unique to the follower.
	Holder string
	// OnLease, when set, is told when an Exclusive follower takes the
	// lease, loses it, releases it, or finds that another holder has it.
	OnLease func(LeaseStatus)
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
	// what it derives, ok false when it has none yet. The apply function
	// commits each batch's cursor (Func's next) in the transaction of the
	// batch's writes. A crash thus can neither lose the cursor of writes
	// committed nor move it past writes that were not. The follower
	// resumes from this cursor, or from the one saved in the feed when
	// the view has none. The cursor saved in the feed is then only what
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

// WithDefaults returns o with a view's own defaults: consumer for a zero
// Consumer and, unless settle is 0, settle for a zero Settle (else
// NewFollower's DefaultSettle).
func (o Options) WithDefaults(consumer string, settle time.Duration) Options {
	if o.Consumer == "" {
		o.Consumer = consumer
	}
	if o.Settle == 0 {
		o.Settle = settle
	}
	return o
}

// DefaultLeaseTTL is Options.LeaseTTL when it is 0: a follower that
// crashed holding its lease is replaced within about 20 seconds (the TTL
// and a third of it, the others' LeasePoll).
const DefaultLeaseTTL = 15 * time.Second

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
	// Lease is an Exclusive follower's hold on its consumer's lease; nil
	// for a follower that is not Exclusive.
	Lease *LeaseStatus
}

// LeaseStatus is an Exclusive follower's hold on its consumer's lease.
type LeaseStatus struct {
	// ID names the follower in the lease (Options.Holder).
	ID string
	// Held says that the follower holds the lease: it is the one that
	// applies the consumer's changes. Otherwise it waits for the lease
	// (or is not running).
	Held bool
	// Holder is the lease's holder as the store said last: ID while
	// Held; while the follower waits, the follower that holds it, empty
	// when none did (the lease was released, or the store could not be
	// asked).
	Holder string
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
	// leaser is the feed's leases, for an Exclusive follower; nil when
	// the feed has none.
	leaser store.Leaser

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
	f := &Follower{feed: feed, apply: apply, opts: opts, notify: make(chan struct{}, 1), urgent: make(chan struct{}, 1), progress: make(chan struct{})}
	if opts.Exclusive {
		if f.opts.LeaseTTL == 0 {
			f.opts.LeaseTTL = DefaultLeaseTTL
		}
		if f.opts.LeasePoll <= 0 {
			f.opts.LeasePoll = f.opts.LeaseTTL / 3
		}
		if f.opts.Holder == "" {
			f.opts.Holder = holderID()
		}
		f.leaser, _ = store.LeaserOf(feed)
		f.status.Lease = &LeaseStatus{ID: f.opts.Holder}
	}
	return f
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
	if st.Lease != nil {
		l := *st.Lease
		st.Lease = &l
	}
	st.Through = f.through
	if !f.behind.IsZero() {
		st.Lag = max(time.Since(f.behind), 0)
	}
	return st
}

// Sync waits until every change committed to the store before the call
// has been applied, or ctx ends. Run must be running (in this process)
// for it to return nil, and an Exclusive follower must hold its lease:
// one that waits for it applies nothing until it takes it over.
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
// and retried. An Exclusive follower follows it only while it holds its
// consumer's lease, and waits for the lease otherwise.
func (f *Follower) Run(ctx context.Context) error {
	if f.opts.OnDamaged != nil {
		ctx = agentmem.WithDamageReporter(ctx, f.opts.OnDamaged)
	}
	f.setRunning(true)
	defer f.setRunning(false)
	if f.opts.Exclusive {
		return f.runExclusive(ctx)
	}
	return f.follow(ctx, nil)
}

// follow follows the feed from the saved cursor until ctx ends or the
// store is closed; h is the lease an Exclusive follower holds meanwhile
// (nil for another), which ends it too when it is lost.
func (f *Follower) follow(ctx context.Context, h *hold) error {
	backoff := newBackoff()
	var cur store.FeedCursor
	for {
		c, err := f.feed.LoadCursor(ctx, f.opts.Consumer)
		if err == nil && c == (store.FeedCursor{}) {
			// Register, so that the feed keeps what this consumer has
			// not read yet (a no-op for a consumer at the start).
			err = f.saveCursor(ctx, h, c)
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
		if errors.Is(err, store.ErrLeaseLost) {
			h.lose(fmt.Errorf("%s: the lease was taken over before the follower started: %w", f.opts.Consumer, err))
			return nil
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
		if err := f.saveCursor(ctx, h, cur); err != nil {
			// A closed store has nothing to save into, and a lease lost
			// leaves the cursor to its new holder: the next follower
			// reads again from the cursor saved last.
			if errors.Is(err, store.ErrLeaseLost) {
				h.lose(fmt.Errorf("%s: the lease was taken over before the cursor was saved: the changes applied since the cursor saved last are applied again by the new holder", f.opts.Consumer))
			} else if !errors.Is(err, context.Canceled) && !errors.Is(err, store.ErrClosed) {
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
			if h != nil && !h.valid() {
				h.lose(h.late(f.opts.Consumer)) // the lease may be another's by now
				return nil
			}
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

// saveCursor saves the cursor in the feed: only while h is held, for an
// Exclusive follower.
func (f *Follower) saveCursor(ctx context.Context, h *hold, c store.FeedCursor) error {
	if h != nil {
		return f.leaser.SaveLeasedCursor(ctx, f.opts.Consumer, f.opts.Holder, c)
	}
	return f.feed.SaveCursor(ctx, f.opts.Consumer, c)
}

// runExclusive is Run for an Exclusive follower: it takes the lease,
// follows the feed while it holds it, waits for it again when it loses
// it, and releases it when ctx ends.
func (f *Follower) runExclusive(ctx context.Context) error {
	if f.leaser == nil {
		err := fmt.Errorf("%s: an exclusive follower needs a feed with leases (store.Leaser), and %T has none", f.opts.Consumer, f.feed)
		f.Report(err)
		return err
	}
	req := store.LeaseRequest{Consumer: f.opts.Consumer, Holder: f.opts.Holder, TTL: f.opts.LeaseTTL}
	if err := store.ValidateLease(req); err != nil {
		err = fmt.Errorf("%s: %w", f.opts.Consumer, err)
		f.Report(err)
		return err
	}
	backoff := newBackoff()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		sent := time.Now()
		lease, err := f.leaser.AcquireLease(ctx, req)
		if err != nil {
			f.setLease(false, "")
			if stop, err := f.failed(ctx, fmt.Errorf("%s: taking the lease: %w", f.opts.Consumer, err), backoff); stop {
				return err
			}
			continue
		}
		backoff.reset()
		if !lease.Held {
			f.setLease(false, lease.Holder)
			timer.Reset(f.opts.LeasePoll)
			select {
			case <-ctx.Done():
				return nil
			case <-timer.C:
			}
			continue
		}
		f.setLease(true, f.opts.Holder)
		err = f.hold(ctx, req, sent)
		if ctx.Err() == nil && err == nil {
			f.setLease(false, "")
			continue // lost: wait for it again
		}
		// Stopping: the cursor is saved (follow); the lease goes, so
		// that another follower takes over at once.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		rerr := f.leaser.ReleaseLease(rctx, req.Consumer, req.Holder)
		cancel()
		if rerr != nil && !errors.Is(rerr, store.ErrClosed) {
			f.Report(fmt.Errorf("%s: releasing the lease (the others take it over when it expires): %w", f.opts.Consumer, rerr))
		}
		f.setLease(false, "")
		return err
	}
}

// hold follows the feed while the follower holds the lease it took with
// a request sent at sent, renewing it in the background; it returns when
// ctx ends, the store is closed or the lease is lost.
func (f *Follower) hold(ctx context.Context, req store.LeaseRequest, sent time.Time) error {
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h := &hold{req: req, cancel: cancel, report: f.Report}
	h.extend(sent)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.keep(hctx, h, sent)
	}()
	err := f.follow(hctx, h)
	cancel()
	<-done
	return err
}

// keep renews the lease h, taken by a request sent at sent, every third
// of its TTL until ctx ends, and ends h when a renewal is refused or none
// is acknowledged in time.
func (f *Follower) keep(ctx context.Context, h *hold, sent time.Time) {
	every := h.req.TTL / 3
	retry := min(every, time.Second)
	next := sent.Add(every)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		wake := next
		if until := h.expiry(); until.Before(wake) {
			wake = until
		}
		timer.Reset(time.Until(wake))
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if !h.valid() {
			h.lose(h.late(f.opts.Consumer))
			return
		}
		if time.Now().Before(next) {
			continue
		}
		// A renewal that the store has not acknowledged by the time the
		// hold ends is given up: applying stops then, not when the store
		// answers.
		at := time.Now()
		rctx, cancel := context.WithDeadline(ctx, h.expiry())
		lease, err := f.leaser.RenewLease(rctx, h.req)
		cancel()
		switch {
		case ctx.Err() != nil || errors.Is(err, store.ErrClosed):
			return
		case err != nil:
			f.Report(fmt.Errorf("%s: renewing the lease: %w", f.opts.Consumer, err))
			next = time.Now().Add(retry)
		case !lease.Held:
			h.lose(fmt.Errorf("%s: the lease was taken over by %q: applying stops", f.opts.Consumer, lease.Holder))
			return
		default:
			h.extend(at)
			next = at.Add(every)
		}
	}
}

// hold is a lease that an Exclusive follower holds: until when it knows
// it holds it, by its own clock, and how to stop following when it no
// longer does.
type hold struct {
	req    store.LeaseRequest
	cancel context.CancelFunc
	report func(error)

	mu    sync.Mutex
	until time.Time // zero once lost
	lost  bool
}

// extend records a request that took or renewed the lease, sent at sent:
// the store's clock counts the TTL from a moment after it. A tenth of the
// TTL is kept aside for the difference between the clocks of the
// processes sharing a PostgreSQL store, which each estimate the
// database's.
func (h *hold) extend(sent time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.lost {
		h.until = sent.Add(h.req.TTL - h.req.TTL/10)
	}
}

// expiry returns until when the follower knows it holds the lease.
func (h *hold) expiry() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.until
}

// valid reports whether the follower still knows it holds the lease.
func (h *hold) valid() bool { return time.Now().Before(h.expiry()) }

// late is why a hold ends when no renewal was acknowledged in time.
func (h *hold) late(consumer string) error {
	return fmt.Errorf("%s: the lease was not renewed in time: applying stops until the lease is taken again", consumer)
}

// lose ends the hold, cancelling what the follower applies; the first
// time, it reports why.
func (h *hold) lose(why error) {
	h.mu.Lock()
	first := !h.lost
	h.lost, h.until = true, time.Time{}
	h.mu.Unlock()
	if first {
		h.report(why)
	}
	h.cancel()
}

// setLease records the follower's hold on its lease and tells OnLease
// when it changed.
func (f *Follower) setLease(held bool, holder string) {
	f.mu.Lock()
	l := f.status.Lease
	changed := l.Held != held || l.Holder != holder
	l.Held, l.Holder = held, holder
	st := *l
	f.mu.Unlock()
	if changed && f.opts.OnLease != nil {
		f.opts.OnLease(st)
	}
}

// holderID returns a name for a follower in its lease: the host's name,
// the process ID and a random part.
func holderID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	host = strings.Map(func(r rune) rune {
		if r <= ' ' || r >= 0x7f {
			return '_'
		}
		return r
	}, host)
	if len(host) > 64 {
		host = host[:64]
	}
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), rand.Text()[:8])
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
