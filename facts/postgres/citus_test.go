package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/facts/postgres"
	"github.com/agentmem/agentmem/internal/citustest"
	"github.com/agentmem/agentmem/internal/testenv"
)

// TestCitusSingleShard checks, on Citus, that a user's fact update (with
// its audit entry) and the reads of the user's facts and audit run on one
// worker and one shard group (see internal/citustest).
func TestCitusSingleShard(t *testing.T) {
	url := testenv.CitusURL(t)
	ctx := context.Background()
	w := citustest.Watch(t, url)
	st, err := postgres.Open(ctx, url, postgres.Options{Schema: testenv.FreshSchema(t, url)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC().Truncate(time.Microsecond)
	f := facts.Fact{ID: "f1", Tenant: "acme", UserID: "alice", Text: "Speaks Dutch.", Confidence: 0.8, CreatedAt: now, ReinforcedAt: now, ValidFrom: now}
	w.SingleShard(t, "update", func() error {
		return st.Update(ctx, "acme", "alice", func([]facts.Fact) (facts.Changes, error) {
			return facts.Changes{Put: []facts.Fact{f}, Audit: []facts.AuditEntry{{Tenant: "acme", UserID: "alice", FactID: "f1", Action: facts.ActionAdded, By: "test", At: now}}}, nil
		})
	})
	w.SingleShard(t, "facts", func() error {
		fs, err := st.Facts(ctx, "acme", "alice")
		if err == nil && len(fs) != 1 {
			t.Errorf("facts: %+v", fs)
		}
		return err
	})
	w.SingleShard(t, "get", func() error { _, err := st.Get(ctx, "acme", "f1"); return err })
	w.SingleShard(t, "audit", func() error { _, err := st.Audit(ctx, "acme", "alice"); return err })
}
