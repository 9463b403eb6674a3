// Package closelock is the lock of an in-memory store that can be
// closed: a read-write mutex that is not taken once the caller's context
// has ended or the store is closed, so that no method reads dropped data.
package closelock

import (
	"context"
	"sync"
)

// RWMutex is a read-write mutex with a closed state. The zero value is
// open and unlocked.
type RWMutex struct {
	mu     sync.RWMutex
	closed bool
}

// RLock takes the read lock and returns the function that releases it.
// It returns ctx's error if ctx has ended, and closed if Close was
// called, without holding the lock.
func (l *RWMutex) RLock(ctx context.Context, closed error) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return nil, closed
	}
	return l.mu.RUnlock, nil
}

// Lock is RLock for the write lock.
func (l *RWMutex) Lock(ctx context.Context, closed error) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, closed
	}
	return l.mu.Unlock, nil
}

// Close marks the mutex closed and runs drop, if not nil, under the
// write lock: once Close returns, RLock and Lock fail and no holder is
// left that could see what drop released. Close may be called again.
func (l *RWMutex) Close(drop func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if drop != nil {
		drop()
	}
}
