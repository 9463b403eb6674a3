package postgres

import (
	"context"
	"testing"

	"github.com/agentmem/agentmem/auth/authtest"
	"github.com/agentmem/agentmem/internal/testenv"
)

func openBench(b *testing.B) *Store {
	url := testenv.PostgresURL(b)
	ks, err := Open(context.Background(), url, testenv.FreshSchema(b, url))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ks.Close() })
	return ks
}

func BenchmarkLookup(b *testing.B) { authtest.BenchLookup(b, openBench(b)) }

func BenchmarkTouch(b *testing.B) { authtest.BenchTouch(b, openBench(b)) }
