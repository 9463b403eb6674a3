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
		New: func(t *testing.T, clock func() time.Time) store.Store {
			st, err := Open(context.Background(), url, Options{Schema: freshSchema(t, url), Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		Reopen: func(t *testing.T, st store.Store) store.Store {
			old := st.(*Store)
			if err := old.Close(); err != nil {
				t.Fatal(err)
			}
			re, err := Open(context.Background(), url, Options{Schema: old.schema, Clock: old.clock})
			if err != nil {
				t.Fatal(err)
			}
			return re
		},
	})
}
