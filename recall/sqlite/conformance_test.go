package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/recall/recalltest"
)

// TestConformance runs the recalltest suite on a database file in a
// temporary directory, reopened as a restarted process would.
func TestConformance(t *testing.T) {
	var mu sync.Mutex
	paths := map[recall.Backend]string{}
	open := func(t *testing.T, path string) recall.Backend {
		b, err := Open(context.Background(), path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		paths[b] = path
		mu.Unlock()
		return b
	}
	recalltest.Run(t, recalltest.Config{
		New: func(t *testing.T) recall.Backend { return open(t, filepath.Join(t.TempDir(), "recall.db")) },
		Reopen: func(t *testing.T, b recall.Backend) recall.Backend {
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			path := paths[b]
			mu.Unlock()
			return open(t, path)
		},
		Damage: func(t *testing.T, b recall.Backend, tenant, id string) {
			mu.Lock()
			path := paths[b]
			mu.Unlock()
			db, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`UPDATE recall_docs SET metadata = '{"m":' WHERE tenant = ? AND id = ?`, tenant, id); err != nil {
				t.Fatal(err)
			}
		},
	})
}
