package closelock

import (
	"context"
	"errors"
	"testing"
)

var errClosed = errors.New("closed")

func TestLockRefusesEndedContextAndClosed(t *testing.T) {
	var l RWMutex
	ctx := context.Background()
	for name, take := range map[string]func(context.Context) (func(), error){
		"RLock": func(ctx context.Context) (func(), error) { return l.RLock(ctx, errClosed) },
		"Lock":  func(ctx context.Context) (func(), error) { return l.Lock(ctx, errClosed) },
	} {
		unlock, err := take(ctx)
		if err != nil {
			t.Fatalf("%s on an open mutex: %v", name, err)
		}
		unlock()
		ended, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := take(ended); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s with an ended context: %v, want context.Canceled", name, err)
		}
	}
	dropped := false
	l.Close(func() { dropped = true })
	if !dropped {
		t.Fatal("Close did not run drop")
	}
	l.Close(nil)
	if _, err := l.RLock(ctx, errClosed); err != errClosed {
		t.Fatalf("RLock after Close: %v, want the closed error", err)
	}
	if _, err := l.Lock(ctx, errClosed); err != errClosed {
		t.Fatalf("Lock after Close: %v, want the closed error", err)
	}
	// Both locks were released: Close would block otherwise.
	l.Close(nil)
}
