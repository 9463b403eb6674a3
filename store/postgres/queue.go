package postgres

import (
	"context"
	"sync"

	"github.com/agentmem/agentmem/store"
)

// appendQueue queues a process's appends to each session in the process.
// Appends to one session are serialized by the session's row lock in the
// database in any case; queued there, each would hold a connection of the
// pool while it waited, and a few busy sessions could take every
// connection from the reads and the appends to other sessions (64
// clients on 4 sessions: the requests spent most of their time waiting
// for a connection). The row lock still serializes the appends of
// several processes.
type appendQueue struct {
	mu    sync.Mutex
	turns map[store.Key]*turn
}

// turn is one session's queue: a token that its holder took (ch is full)
// and the number of appends holding or waiting for it.
type turn struct {
	ch      chan struct{}
	waiting int
}

// wait waits for the session's turn, or for ctx to end, and returns the
// function that ends the turn.
func (q *appendQueue) wait(ctx context.Context, key store.Key) (done func(), err error) {
	q.mu.Lock()
	if q.turns == nil {
		q.turns = map[store.Key]*turn{}
	}
	t := q.turns[key]
	if t == nil {
		t = &turn{ch: make(chan struct{}, 1)}
		q.turns[key] = t
	}
	t.waiting++
	q.mu.Unlock()
	release := func() {
		q.mu.Lock()
		if t.waiting--; t.waiting == 0 {
			delete(q.turns, key)
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
