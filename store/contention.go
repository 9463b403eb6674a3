package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/agentmem/agentmem"
)

// Writes that lose races. Some writes are computed from what the writer read
// of the session: a tool result completes the action as read, a pop or a
// clear rewrites the working set as read, a compaction keeps what it read.
// They are appended conditionally on it (ExpectedLastSeq), so that nothing
// another writer appended in between is lost, and one that another writer got
// ahead of must read again and retry. When the caller stated no position of
// its own (no ExpectedLastSeq, no If-Match), such a write does not depend on
// where the log is. Losing a race then says nothing the caller needs to hear:
// the writer retries, within a RetryPolicy, and only then gives up with
// ErrContended. A write whose caller stated a position is never retried: its
// conflict is the answer.

// RetryPolicy bounds the retries of a write that loses races with other
// writers of a session (see Do). A zero field takes DefaultRetry's
// value.
type RetryPolicy struct {
	// Attempts is the most tries, the first included.
	Attempts int
	// Within bounds the time from the start of the first try to the
	// start of the last: a try that its wait would start later is not
	// made (a try that started runs to its end, within the caller's
	// context).
	Within time.Duration
	// Backoff and MaxBackoff set the waits: before try n+1 the writer
	// waits a random time, uniform between 0 and min(MaxBackoff,
	// Backoff·2^(n-1)), so that writers that keep colliding spread out
	// rather than collide again.
	Backoff, MaxBackoff time.Duration
	// OnLost, when set, is told of each try that lost a race, by the
	// operation's name (Do's op) and the try's number: retry says whether
	// another try follows (false: the write gives up with ErrContended).
	// It is called from the writer's goroutine.
	OnLost func(op string, attempt int, retry bool)
	// Turn, when set, is called before each try, and the function it
	// returns after it. It is the session's turn among the writers of a
	// process that take turns, so that they do not race one another. Only
	// the writers that do not take turns, and other processes, can get
	// ahead of a try. An error from it (its context ended) ends the write.
	// Waits between tries are out of turn.
	Turn func(ctx context.Context) (done func(), err error)
}

// DefaultRetry is the policy of the writes of this package and of
// package sessions when the caller gives none: up to 50 tries within 3
// seconds of the first, waiting up to 1 ms, 2 ms, 4 ms ... 64 ms (then
// 64 ms each time) between them.
var DefaultRetry = RetryPolicy{Attempts: 50, Within: 3 * time.Second, Backoff: time.Millisecond, MaxBackoff: 64 * time.Millisecond}

// ErrContended reports a write that other writers of the session got
// ahead of on every try its RetryPolicy allowed. Nothing was stored. It
// wraps agentmem.ErrUnavailable, not agentmem.ErrConflict: the caller
// stated no position that turned out wrong; the session was too busy,
// and the same call may succeed later. The errors Do returns for it are
// *ContendedError.
var ErrContended = fmt.Errorf("store: other writers of the session kept getting ahead: %w", agentmem.ErrUnavailable)

// ContendedError is the error of a write that lost every try (see
// ErrContended).
type ContendedError struct {
	// Op names the write (Do's op).
	Op string
	// Attempts is the number of tries made, and Elapsed the time from the
	// start of the first to the end of the last.
	Attempts int
	Elapsed  time.Duration
	// Err is the last try's error.
	Err error
}

func (e *ContendedError) Error() string {
	return fmt.Sprintf("store: %s: other writers of the session got ahead of all %d tries in %v; nothing was stored: %v (last: %v)",
		e.Op, e.Attempts, e.Elapsed.Round(time.Millisecond), agentmem.ErrUnavailable, e.Err)
}

// Unwrap makes errors.Is(err, ErrContended) and errors.Is(err,
// agentmem.ErrUnavailable) true. The last try's conflict is not among
// the errors it wraps: the write did not fail on a position its caller
// gave.
func (e *ContendedError) Unwrap() error { return ErrContended }

// policy returns p with DefaultRetry's values in its zero fields (nil:
// DefaultRetry).
func (p *RetryPolicy) policy() RetryPolicy {
	if p == nil {
		return DefaultRetry
	}
	q := *p
	if q.Attempts <= 0 {
		q.Attempts = DefaultRetry.Attempts
	}
	if q.Within <= 0 {
		q.Within = DefaultRetry.Within
	}
	if q.Backoff <= 0 {
		q.Backoff = DefaultRetry.Backoff
	}
	if q.MaxBackoff <= 0 {
		q.MaxBackoff = DefaultRetry.MaxBackoff
	}
	return q
}

// Do runs write, the try numbered attempt (from 1) of a write that does
// not depend on the log's position, and runs it again, after a wait,
// while it loses a race (LostRace): each try reads what it needs again.
// It returns nil when a try succeeds, a try's error that is not a lost
// race as it is, ctx's error when ctx ends during a wait, and a
// *ContendedError (ErrContended) when every try the policy allows lost.
// op names the write to OnLost and in the error. A nil p is
// DefaultRetry.
//
// Only a caller that stated no position may call Do: a write with the
// caller's own ExpectedLastSeq (an If-Match) fails on its first
// conflict.
func (p *RetryPolicy) Do(ctx context.Context, op string, write func(attempt int) error) error {
	q := p.policy()
	start := time.Now()
	for attempt := 1; ; attempt++ {
		err := q.try(ctx, attempt, write)
		if err == nil || !LostRace(err) {
			return err
		}
		wait := q.wait(attempt)
		elapsed := time.Since(start)
		retry := attempt < q.Attempts && elapsed+wait < q.Within && ctx.Err() == nil
		if q.OnLost != nil {
			q.OnLost(op, attempt, retry)
		}
		if !retry {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &ContendedError{Op: op, Attempts: attempt, Elapsed: elapsed, Err: err}
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// try runs write's try n, in turn if the policy takes turns.
func (q RetryPolicy) try(ctx context.Context, n int, write func(attempt int) error) error {
	if q.Turn == nil {
		return write(n)
	}
	done, err := q.Turn(ctx)
	if err != nil {
		return err
	}
	defer done()
	return write(n)
}

// wait returns the random wait after try n.
func (q RetryPolicy) wait(n int) time.Duration {
	ceil := q.MaxBackoff
	if n-1 < 62 && q.Backoff < q.MaxBackoff>>(n-1) {
		ceil = q.Backoff << (n - 1)
	}
	return time.Duration(rand.Int64N(int64(ceil) + 1))
}

// sleep waits d, or until ctx ends (its error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// LostRace reports whether a write failed because another writer of the
// session appended first (agentmem.ErrConflict from a conditional append).
// A failure because of the request itself is not one: reused step IDs
// (ErrIDReused), a tool result that contradicts the recorded one
// (*agentmem.ResultConflictError) or an empty working set to pop
// (ErrNothingToPop). The writer may read again and retry (see
// RetryPolicy.Do).
func LostRace(err error) bool {
	var rc *agentmem.ResultConflictError
	return errors.Is(err, agentmem.ErrConflict) && !errors.Is(err, ErrIDReused) && !errors.Is(err, ErrNothingToPop) &&
		!errors.As(err, &rc)
}

// Backoff waits before try attempt+1 of a writer that lost a race
// (LostRace) attempt times, as DefaultRetry waits: a random time up to
// min(64 ms, 2^(attempt-1) ms). It returns ctx's error if ctx ends first.
// Writers with a loop of their own use it; RetryPolicy.Do is the loop.
func Backoff(ctx context.Context, attempt int) error {
	return sleep(ctx, DefaultRetry.wait(max(attempt, 1)))
}

// ErrNothingToPop reports a pop of a session whose working set is empty.
// It wraps agentmem.ErrConflict: the session's state, not the request,
// is what stands in the way.
var ErrNothingToPop = fmt.Errorf("store: the session's working set is empty: nothing to pop: %w", agentmem.ErrConflict)
