package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/facts/factstest"
	"github.com/agentmem/agentmem/facts/sqlite"
)

func TestConformance(t *testing.T) {
	var mu sync.Mutex
	paths := map[facts.Store]string{}
	open := func(t *testing.T, path string) facts.Store {
		st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		paths[st] = path
		mu.Unlock()
		return st
	}
	factstest.Run(t, factstest.Config{
		New: func(t *testing.T) facts.Store { return open(t, filepath.Join(t.TempDir(), "agentmem.db")) },
		Share: func(t *testing.T, st facts.Store) facts.Store {
			mu.Lock()
			path := paths[st]
			mu.Unlock()
			return open(t, path)
		},
		Damage: func(t *testing.T, st facts.Store, tenant, id string) {
			mu.Lock()
			path := paths[st]
			mu.Unlock()
			db, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`UPDATE facts SET metadata = '{"m":' WHERE tenant = ? AND id = ?`, tenant, id); err != nil {
				t.Fatal(err)
			}
		},
	})
}
