package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/blocks/postgres"
	"github.com/agentmem/agentmem/internal/citustest"
	"github.com/agentmem/agentmem/internal/testenv"
)

// TestCitusSingleShard checks, on Citus, that a block's write (with the
// entry of its history), the reads of a block, of an owner's blocks and
// of a block's history, and the deletes each run on one worker and one
// shard group (see internal/citustest): a tenant's blocks are never
// spread over the cluster.
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
	k := blocks.Key{Tenant: "acme", Owner: blocks.User("alice"), Label: "human"}
	b := blocks.Block{Key: k, Value: "Name: Ann.", Limit: 200, Version: 1, CreatedAt: now, UpdatedAt: now, UpdatedBy: "test"}
	w.SingleShard(t, "put", func() error {
		return st.Put(ctx, b, blocks.Change{Version: 1, Action: blocks.ActionCreated, By: "test", At: now, After: b.Value})
	})
	w.SingleShard(t, "get", func() error { _, err := st.Get(ctx, k); return err })
	w.SingleShard(t, "list", func() error {
		bs, err := st.List(ctx, "acme", blocks.User("alice"))
		if err == nil && len(bs) != 1 {
			t.Errorf("list: %+v", bs)
		}
		return err
	})
	w.SingleShard(t, "history", func() error {
		h, err := st.History(ctx, k)
		if err == nil && len(h) != 1 {
			t.Errorf("history: %+v", h)
		}
		return err
	})
	w.SingleShard(t, "delete", func() error { return st.Delete(ctx, k, 1) })
	w.SingleShard(t, "delete owner", func() error { return st.DeleteOwner(ctx, "acme", blocks.Session("s1")) })
}
