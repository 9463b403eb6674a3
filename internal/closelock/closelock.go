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
	return l.take(ctx, closed, l.mu.RLock, l.mu.RUnlock)
}

// Lock is RLock for the write lock.
func (l *RWMutex) Lock(ctx context.Context, closed error) (func(), error) {
	return l.take(ctx, closed, l.mu.Lock, l.mu.Unlock)
}

// take takes the lock with lock and returns unlock, as RLock says.
func (l *RWMutex) take(ctx context.Context, closed error, lock, unlock func()) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lock()
	if l.closed {
		unlock()
		return nil, closed
	}
	return unlock, nil
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
