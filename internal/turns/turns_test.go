package turns

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
)

// TestTurns: holders of one key take turns, those of others do not wait
// for them, a waiter whose context ends gives up, and a key's state is gone
// when nothing holds or waits for it.
func TestTurns(t *testing.T) {
	var q Turns[string]
	ctx := context.Background()
	a, b := "a", "b"
	doneA, err := q.Wait(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	// Another session's turn comes at once.
	doneB, err := q.Wait(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	doneB()
	// The same session's waits while a holds it, until its context ends.
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error)
	go func() {
		_, err := q.Wait(cctx, a)
		gaveUp <- err
	}()
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose context ended: %v", err)
	}
	// Waiters of a session run one at a time, each after the holder.
	var (
		mu      sync.Mutex
		inside  int
		most    int
		wg      sync.WaitGroup
		started = make(chan struct{})
	)
	for range 8 {
		wg.Go(func() {
			started <- struct{}{}
			done, err := q.Wait(ctx, a)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			most = max(most, inside)
			mu.Unlock()
			runtime.Gosched() // let another in, if the turn let it
			mu.Lock()
			inside--
			mu.Unlock()
			done()
		})
	}
	for range 8 {
		<-started
	}
	doneA()
	wg.Wait()
	if most != 1 {
		t.Errorf("%d holders of one key had their turn at once", most)
	}
	if n := q.Len(); n != 0 {
		t.Errorf("%d keys still held after every turn ended", n)
	}
}
