package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentmem/agentmem/auth/authtest"
	"github.com/agentmem/agentmem/internal/sqlitedb"
)

func openBench(b *testing.B) *Store {
	ks, err := Open(context.Background(), filepath.Join(b.TempDir(), "agentmem.db"), sqlitedb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ks.Close() })
	return ks
}

func BenchmarkLookup(b *testing.B) { authtest.BenchLookup(b, openBench(b)) }

func BenchmarkTouch(b *testing.B) { authtest.BenchTouch(b, openBench(b)) }
