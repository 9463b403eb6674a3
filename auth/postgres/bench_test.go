package postgres

import (
	"context"
	"testing"

	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/auth/authtest"
	"github.com/agentmem/agentmem/internal/testenv"
)

func BenchmarkKeys(b *testing.B) {
	url := testenv.PostgresURL(b)
	authtest.Bench(b, func(b *testing.B) auth.KeyStore {
		ks, err := Open(context.Background(), url, testenv.FreshSchema(b, url))
		if err != nil {
			b.Fatal(err)
		}
		return ks
	})
}
