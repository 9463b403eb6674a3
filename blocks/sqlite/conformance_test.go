package sqlite_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/blocks/blockstest"
	"github.com/agentmem/agentmem/blocks/sqlite"
)

func TestConformance(t *testing.T) {
	var mu sync.Mutex
	paths := map[blocks.Store]string{}
	open := func(t *testing.T, path string) blocks.Store {
		st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		paths[st] = path
		mu.Unlock()
		return st
	}
	blockstest.Run(t, blockstest.Config{
		New: func(t *testing.T) blocks.Store { return open(t, filepath.Join(t.TempDir(), "agentmem.db")) },
		Share: func(t *testing.T, st blocks.Store) blocks.Store {
			mu.Lock()
			path := paths[st]
			mu.Unlock()
			return open(t, path)
		},
	})
}
