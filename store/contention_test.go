package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
)

// errLost is the error of a conditional append that another writer got
// ahead of, as the backends report it.
var errLost = &StaleError{SessionID: "s", Expected: 3, LastSeq: 4}

// TestRetryPolicyDo: a write that loses races is tried again until it
// succeeds, within the policy's tries, and each lost race is reported.
func TestRetryPolicyDo(t *testing.T) {
	ctx := context.Background()
	type report struct {
		op      string
		attempt int
		retry   bool
	}
	var reports []report
	p := &RetryPolicy{Attempts: 5, Backoff: time.Microsecond, MaxBackoff: time.Microsecond,
		OnLost: func(op string, attempt int, retry bool) { reports = append(reports, report{op, attempt, retry}) }}

	tries := 0
	err := p.Do(ctx, "w", func(attempt int) error {
		if tries++; attempt != tries {
			t.Errorf("try %d numbered %d", tries, attempt)
		}
		if tries < 3 {
			return errLost
		}
		return nil
	})
	if err != nil || tries != 3 {
		t.Fatalf("a write that lost twice: %v after %d tries", err, tries)
	}
	if fmt.Sprint(reports) != "[{w 1 true} {w 2 true}]" {
		t.Fatalf("reports %v", reports)
	}

	// Every try lost: ErrContended, which is unavailable, not a conflict.
	reports, tries = nil, 0
	err = p.Do(ctx, "w", func(int) error { tries++; return errLost })
	var ce *ContendedError
	if !errors.As(err, &ce) || ce.Op != "w" || ce.Attempts != 5 || ce.Err != errLost || tries != 5 {
		t.Fatalf("a write that always lost: %v after %d tries (%+v)", err, tries, ce)
	}
	if !errors.Is(err, ErrContended) || !errors.Is(err, agentmem.ErrUnavailable) || errors.Is(err, agentmem.ErrConflict) {
		t.Fatalf("%v: wraps the wrong sentinels", err)
	}
	if len(reports) != 5 || !reports[3].retry || reports[4] != (report{"w", 5, false}) {
		t.Fatalf("reports %v", reports)
	}

	// Refusals that are the request's own are not races: no retry.
	for _, refusal := range []error{
		&IDReusedError{Index: 0, ID: "k/0", Seq: 2, Reason: "differs"},
		&agentmem.ResultConflictError{CallID: "c1"},
		fmt.Errorf("session s: %w", ErrNothingToPop),
		&agentmem.InvalidError{Field: "messages[0]", Reason: "bad"},
		errors.New("broken"),
	} {
		tries = 0
		if err := p.Do(ctx, "w", func(int) error { tries++; return refusal }); err != refusal || tries != 1 {
			t.Errorf("%v: %v after %d tries, want it once", refusal, err, tries)
		}
	}
}

// TestRetryPolicyWithin: Within ends a write that Attempts would let
// try for hours.
func TestRetryPolicyWithin(t *testing.T) {
	p := &RetryPolicy{Attempts: 1 << 30, Within: 20 * time.Millisecond, Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}
	tries := 0
	err := p.Do(context.Background(), "w", func(int) error {
		tries++
		return errLost
	})
	var ce *ContendedError
	if !errors.As(err, &ce) || ce.Attempts != tries || tries < 2 {
		t.Fatalf("%v after %d tries", err, tries)
	}
	// Without Within, waits of up to 2 ms would go on for weeks.
	if ce.Elapsed > time.Second {
		t.Fatalf("gave up after %d tries, %v after the first, with Within %v", tries, ce.Elapsed, p.Within)
	}
}

// TestRetryPolicyContext: a write whose context ends while it waits
// returns the context's error, and tries no more.
func TestRetryPolicyContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &RetryPolicy{Attempts: 100, Within: time.Hour, Backoff: time.Hour, MaxBackoff: time.Hour}
	tries := 0
	err := p.Do(ctx, "w", func(int) error {
		tries++
		cancel() // the client went away during the try
		return errLost
	})
	if !errors.Is(err, context.Canceled) || tries != 1 {
		t.Fatalf("%v after %d tries", err, tries)
	}
}

// TestRetryPolicyTurn: each try runs in a turn, and the waits between
// tries are out of it; a turn that cannot be had ends the write.
func TestRetryPolicyTurn(t *testing.T) {
	held := false
	turns := 0
	p := &RetryPolicy{Attempts: 3, Backoff: time.Microsecond, MaxBackoff: time.Microsecond,
		OnLost: func(string, int, bool) {
			if held {
				t.Error("a lost race reported in turn")
			}
		},
		Turn: func(context.Context) (func(), error) {
			if held {
				t.Error("a turn taken twice")
			}
			held = true
			turns++
			return func() { held = false }, nil
		}}
	tries := 0
	err := p.Do(context.Background(), "w", func(int) error {
		if !held {
			t.Error("a try out of turn")
		}
		tries++
		return errLost
	})
	if !errors.Is(err, ErrContended) || tries != 3 || turns != 3 || held {
		t.Fatalf("%v: %d tries, %d turns, held %v", err, tries, turns, held)
	}
	p.Turn = func(ctx context.Context) (func(), error) { return nil, context.Canceled }
	if err := p.Do(context.Background(), "w", func(int) error { t.Error("a try without its turn"); return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("no turn: %v", err)
	}
}

// TestRetryPolicyDefaults: zero fields take DefaultRetry's, and the
// waits grow from Backoff to MaxBackoff without overflowing.
func TestRetryPolicyDefaults(t *testing.T) {
	var nilPolicy *RetryPolicy
	if q := nilPolicy.policy(); q.Attempts != DefaultRetry.Attempts || q.Within != DefaultRetry.Within {
		t.Fatalf("nil policy: %+v", q)
	}
	q := (&RetryPolicy{Attempts: 2}).policy()
	if q.Attempts != 2 || q.Within != DefaultRetry.Within || q.Backoff != DefaultRetry.Backoff || q.MaxBackoff != DefaultRetry.MaxBackoff {
		t.Fatalf("partial policy: %+v", q)
	}
	for n := 1; n < 200; n++ {
		ceil := min(DefaultRetry.MaxBackoff, DefaultRetry.Backoff<<min(n-1, 40))
		for range 20 {
			if d := DefaultRetry.wait(n); d < 0 || d > ceil {
				t.Fatalf("wait after try %d: %v, want within [0, %v]", n, d, ceil)
			}
		}
	}
}
