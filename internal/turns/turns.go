// Package turns lets goroutines take turns by key: one holds a key's turn
// at a time, and holders of other keys do not wait for it.
package turns

import (
	"context"
	"sync"
)

// Turns hands out the turns of keys. The zero value is ready to use. A
// key's state is kept only while a goroutine holds or waits for its turn.
type Turns[K comparable] struct {
	mu sync.Mutex
	m  map[K]*turn
}

// turn is one key's: a token its holder took (ch is full) and the number
// of goroutines holding or waiting for it.
type turn struct {
	ch      chan struct{}
	waiting int
}

// Wait waits for key's turn, or for ctx to end, and returns the function
// that ends the turn. Turns are not reentrant: a holder that waits for its
// own key again waits forever (or until ctx ends).
func (q *Turns[K]) Wait(ctx context.Context, key K) (done func(), err error) {
	q.mu.Lock()
	if q.m == nil {
		q.m = map[K]*turn{}
	}
	t := q.m[key]
	if t == nil {
		t = &turn{ch: make(chan struct{}, 1)}
		q.m[key] = t
	}
	t.waiting++
	q.mu.Unlock()
	release := func() {
		q.mu.Lock()
		if t.waiting--; t.waiting == 0 {
			delete(q.m, key)
		}
		q.mu.Unlock()
	}
	select {
	case t.ch <- struct{}{}:
		return func() { <-t.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

// Len returns the number of keys whose turn is held or waited for.
func (q *Turns[K]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.m)
}
