package ptest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem/recall"
	recallsqlite "github.com/agentmem/agentmem/recall/sqlite"
	"github.com/agentmem/agentmem/store"
	storesqlite "github.com/agentmem/agentmem/store/sqlite"
)

// Clock is a manual clock, safe for concurrent use, that moves only when
// told (or by Step on every reading, when set).
type Clock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

// NewClock returns a clock at start that advances by step after every
// reading (0: never by itself).
func NewClock(start time.Time, step time.Duration) *Clock {
	return &Clock{now: start, step: step}
}

// Now returns the time and advances the clock by its step.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now
	c.now = c.now.Add(c.step)
	return t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// SQLite opens the session store and the recall index of one SQLite file,
// as a process of agentmem would; Close closes both.
type SQLite struct {
	Store *store.Store
	Index *recall.Index
}

// OpenSQLite opens (creating it) the database file at path with the
// store's clock set to clock. It fails the test on error.
func OpenSQLite(t testing.TB, path string, clock func() time.Time) *SQLite {
	t.Helper()
	ctx := context.Background()
	st, err := storesqlite.Open(ctx, path, storesqlite.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	b, err := recallsqlite.Open(ctx, path, recallsqlite.Options{})
	if err != nil {
		_ = st.Close()
		t.Fatal(err)
	}
	return &SQLite{Store: st, Index: recall.New(b, recall.Options{})}
}

// Close closes the store and the index.
func (s *SQLite) Close(t testing.TB) {
	t.Helper()
	if err := s.Index.Close(); err != nil {
		t.Error(err)
	}
	if err := s.Store.Close(); err != nil {
		t.Error(err)
	}
}
