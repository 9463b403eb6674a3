package sessions

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/store"
)

// TestTurns: writers of one session take turns, those of another do not
// wait for them, a waiter whose context ends gives up, and a session's
// turn is forgotten when nobody holds or waits for it.
func TestTurns(t *testing.T) {
	var q turns
	ctx := context.Background()
	a, b := store.Key{Tenant: "t", ID: "a"}, store.Key{Tenant: "t", ID: "b"}
	doneA, err := q.wait(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	doneB, err := q.wait(ctx, b) // at once
	if err != nil {
		t.Fatal(err)
	}
	doneB()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := q.wait(cctx, a); !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose context ended: %v", err)
	}
	var (
		mu           sync.Mutex
		inside, most int
		wg           sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			done, err := q.wait(ctx, a)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			most = max(most, inside)
			mu.Unlock()
			runtime.Gosched() // another writer in turn now would count two
			mu.Lock()
			inside--
			mu.Unlock()
			done()
		})
	}
	doneA()
	wg.Wait()
	if most != 1 {
		t.Fatalf("%d writers of one session in turn at once", most)
	}
	if n := q.size(); n != 0 {
		t.Fatalf("%d sessions remembered after every turn ended", n)
	}
}
