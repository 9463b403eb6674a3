package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/facts/factstest"
	"github.com/agentmem/agentmem/facts/postgres"
	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/jackc/pgx/v5"
)

func TestConformance(t *testing.T) { conformance(t, testenv.PostgresURL(t)) }

// TestConformanceCitus runs the factstest suite on a Citus cluster,
// where the facts tables are distributed by tenant.
func TestConformanceCitus(t *testing.T) { conformance(t, testenv.CitusURL(t)) }

func conformance(t *testing.T, url string) {
	var mu sync.Mutex
	schemas := map[facts.Store]string{}
	open := func(t *testing.T, schema string) facts.Store {
		st, err := postgres.Open(context.Background(), url, postgres.Options{Schema: schema, MaxConns: 8})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		schemas[st] = schema
		mu.Unlock()
		return st
	}
	factstest.Run(t, factstest.Config{
		New: func(t *testing.T) facts.Store { return open(t, testenv.FreshSchema(t, url)) },
		Share: func(t *testing.T, st facts.Store) facts.Store {
			mu.Lock()
			schema := schemas[st]
			mu.Unlock()
			return open(t, schema)
		},
		// jsonb holds only JSON: the damage is metadata that is not an
		// object of strings.
		Damage: func(t *testing.T, st facts.Store, tenant, id string) {
			mu.Lock()
			schema := schemas[st]
			mu.Unlock()
			conn, err := pgx.Connect(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			if _, err := conn.Exec(context.Background(), `UPDATE `+pgx.Identifier{schema, "facts"}.Sanitize()+` SET metadata = '{"m":1}' WHERE tenant = $1 AND id = $2`, tenant, id); err != nil {
				t.Fatal(err)
			}
		},
	})
}
