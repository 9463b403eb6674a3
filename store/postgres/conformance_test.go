package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storetest"
)

// TestConformance runs the shared store suite, each subtest on a schema of
// its own.
func TestConformance(t *testing.T) { conformance(t, testURL(t)) }

// TestConformanceCitus runs the shared store suite on a Citus cluster,
// where the tables are distributed by tenant.
func TestConformanceCitus(t *testing.T) { conformance(t, testenv.CitusURL(t)) }

func conformance(t *testing.T, url string) {
	storetest.Run(t, storetest.Config{
		New: func(t *testing.T, clock func() time.Time) store.Driver {
			st, err := OpenDriver(context.Background(), url, Options{Schema: freshSchema(t, url), Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		Reopen: func(t *testing.T, st *store.Store) store.Driver {
			old := driverOf(t, st)
			if err := old.Close(); err != nil {
				t.Fatal(err)
			}
			re, err := OpenDriver(context.Background(), url, Options{Schema: old.schema, Clock: old.clock})
			if err != nil {
				t.Fatal(err)
			}
			return re
		},
		Damage: damage,
	})
}

// damage makes the stored metadata of a session malformed JSON, as a
// row changed by hand would be.
func damage(t *testing.T, st *store.Store, tenant, id string) {
	t.Helper()
	tag, err := driverOf(t, st).pool.Exec(context.Background(), `UPDATE sessions SET metadata = '{"m":' WHERE tenant = $1 AND id = $2`, tenant, id)
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("damaged %d rows", tag.RowsAffected())
	}
}
