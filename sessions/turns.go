package sessions

import (
	"context"
	"sync"

	"github.com/agentmem/agentmem/store"
)

// turns lets the writes of a process that read a session before they
// write it (a tool result completing a stored call, a pop, a clear) take
// turns, session by session: one that read the session appends before
// the next reads it, so they never get ahead of one another, and retry
// only when a writer that does not take turns (a plain append, a
// compaction that waits for an LLM, another process) got in between.
// Without turns, the results of one action sent at once would lose most
// of their tries to each other.
type turns struct {
	mu sync.Mutex
	m  map[store.Key]*turn
}

// turn is one session's: a token its holder took (ch is full) and the
// number of writers holding or waiting for it.
type turn struct {
	ch      chan struct{}
	waiting int
}

// wait waits for the session's turn, or for ctx to end, and returns the
// function that ends the turn.
func (q *turns) wait(ctx context.Context, key store.Key) (done func(), err error) {
	q.mu.Lock()
	if q.m == nil {
		q.m = map[store.Key]*turn{}
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

// size returns the number of sessions with a writer holding or waiting
// for their turn.
func (q *turns) size() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.m)
}
