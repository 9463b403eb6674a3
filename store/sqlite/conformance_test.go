package sqlite

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storetest"
)

// TestConformance runs the storetest suite on a database file in a
// temporary directory, reopened as a restarted process would.
func TestConformance(t *testing.T) {
	// Where each store's file is and which clock it reads, for Reopen.
	type origin struct {
		path  string
		clock func() time.Time
	}
	var mu sync.Mutex
	origins := map[*Store]origin{}
	open := func(t *testing.T, o origin) *Store {
		st, err := OpenDriver(context.Background(), o.path, Options{Clock: o.clock})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		origins[st] = o
		mu.Unlock()
		return st
	}
	storetest.Run(t, storetest.Config{
		New: func(t *testing.T, clock func() time.Time) store.Driver {
			return open(t, origin{filepath.Join(t.TempDir(), "agentmem.db"), clock})
		},
		Reopen: func(t *testing.T, st *store.Store) store.Driver {
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			o := origins[driverOf(t, st)]
			mu.Unlock()
			return open(t, o)
		},
		Goroutines:  32,
		AppendsEach: 10,
		Damage:      damage,
	})
}

// damage makes the stored metadata of a session malformed JSON, as a
// row changed by hand would be.
func damage(t *testing.T, st *store.Store, tenant, id string) {
	t.Helper()
	n, err := driverOf(t, st).w.ExecContext(context.Background(), `UPDATE sessions SET metadata = '{"m":' WHERE tenant = ? AND id = ?`, tenant, id)
	if err != nil {
		t.Fatal(err)
	}
	if rows, _ := n.RowsAffected(); rows != 1 {
		t.Fatalf("damaged %d rows", rows)
	}
}
