package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/auth/authtest"
	"github.com/agentmem/agentmem/internal/sqlitedb"
)

func BenchmarkKeys(b *testing.B) {
	authtest.Bench(b, func(b *testing.B) auth.KeyStore {
		ks, err := Open(context.Background(), filepath.Join(b.TempDir(), "agentmem.db"), sqlitedb.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return ks
	})
}
