package sqlite

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storetest"
)

// testClock is a manual clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock {
	return &testClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// driverOf returns the driver of a store of this package.
func driverOf(t testing.TB, st *store.Store) *Store {
	t.Helper()
	var d *Store
	if !st.As(&d) {
		t.Fatalf("%v is not a store of package sqlite", st)
	}
	return d
}

// openTemp opens a store on a new file in a temporary directory.
func openTemp(t testing.TB, clock func() time.Time) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agentmem.db")
	st, err := OpenDriver(context.Background(), path, Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

// actionStep returns a deterministic action step of about size bytes of
// JSON: a tool call and its result, as an agent records them.
func actionStep(id string, seed, size int) *agentmem.ActionStep {
	return storetest.BenchStep(id, seed, size)
}

func taskStep(id, task string) *agentmem.TaskStep {
	return &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: id}, Task: task}
}

func ptr[T any](v T) *T { return &v }
