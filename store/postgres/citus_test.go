package postgres

import (
	"context"
	neturl "net/url"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/citustest"
	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/store"
)

// TestCitusLayout checks the tables of a new store on Citus: sessions,
// entries and feed distributed by tenant in one co-location group, the
// feed's cursors a table of the coordinator, and as many shards as the
// URL's citus.shard_count asks.
func TestCitusLayout(t *testing.T) {
	u, err := neturl.Parse(testenv.CitusURL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("citus.shard_count", "6")
	u.RawQuery = q.Encode()
	st := openAt(t, u.String(), Options{})
	if n := queryInt(t, st, `SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'sessions'::regclass`); n != 6 {
		t.Errorf("sessions has %d shards, want the 6 of citus.shard_count", n)
	}
	rows, err := st.pool.Query(context.Background(), `SELECT logicalrelid::regclass::text, column_to_column_name(logicalrelid, partkey), colocationid
		FROM pg_dist_partition WHERE logicalrelid::regclass::text IN ('sessions', 'entries', 'feed', 'feed_cursors', 'idempotency_keys') ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	type dist struct {
		table, column string
		group         int
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dist, error) {
		var d dist
		return d, r.Scan(&d.table, &d.column, &d.group)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("distributed tables: %+v, want entries, feed, idempotency_keys and sessions", got)
	}
	for _, d := range got {
		if d.column != "tenant" || d.group != got[0].group {
			t.Fatalf("distributed tables: %+v, want all by tenant, in one co-location group", got)
		}
	}
}

// TestCitusSingleShard runs every store operation that serves a request
// on Citus and checks, from the commands the coordinator sends
// (citus.log_remote_commands), that each one touches one worker and one
// shard group (the tenant's): no request runs a cross-shard query or
// transaction; and that each commits in one phase (no PREPARE
// TRANSACTION), which the feed needs.
func TestCitusSingleShard(t *testing.T) {
	url := testenv.CitusURL(t)
	ctx := context.Background()
	w := citustest.Watch(t, url)
	w.OnePhase = true
	st := openAt(t, url, Options{})
	check := func(op string, fn func() error) { t.Helper(); w.SingleShard(t, op, fn) }
	step := func(id string) []agentmem.Step {
		return []agentmem.Step{&agentmem.ActionStep{StepInfo: agentmem.StepInfo{ID: id}, ModelOutput: id}}
	}
	check("create", func() error {
		_, err := st.Create(ctx, store.CreateRequest{Tenant: "acme", ID: "a"})
		return err
	})
	check("append", func() error {
		_, err := st.Append(ctx, store.AppendRequest{Tenant: "acme", SessionID: "a", Steps: step("a1")})
		return err
	})
	check("append with a compaction", func() error {
		_, err := st.Append(ctx, store.AppendRequest{Tenant: "acme", SessionID: "a", Steps: step("a2"),
			Compaction: &store.CompactionRecord{Working: []int64{store.NewStepRef(0)}, Removed: []int64{1}}})
		return err
	})
	check("retried append", func() error {
		_, err := st.Append(ctx, store.AppendRequest{Tenant: "acme", SessionID: "a", Steps: step("a2")})
		return err
	})
	check("create a branch", func() error {
		_, err := st.Create(ctx, store.CreateRequest{Tenant: "acme", ID: "b", ParentID: "a"})
		return err
	})
	check("append to the branch", func() error {
		_, err := st.Append(ctx, store.AppendRequest{Tenant: "acme", SessionID: "b", Steps: step("b1")})
		return err
	})
	check("get", func() error {
		_, err := st.Get(ctx, "acme", "b")
		return err
	})
	check("read", func() error {
		r, err := st.Read(ctx, store.ReadRequest{Tenant: "acme", SessionID: "b"})
		if err == nil && len(r.Entries) != 4 {
			t.Errorf("read: %d entries, want 4", len(r.Entries))
		}
		return err
	})
	check("context (working set)", func() error {
		r, err := st.Read(ctx, store.ReadRequest{Tenant: "acme", SessionID: "b", WorkingSet: true})
		if got := workingIDs(r.Steps); err == nil && !slices.Equal(got, []string{"a2", "b1"}) {
			t.Errorf("context: %v", got)
		}
		return err
	})
	check("delete the parent", func() error { return st.Delete(ctx, "acme", "a") })
	check("list a tenant", func() error {
		_, err := st.List(ctx, store.ListRequest{Tenant: "acme"})
		return err
	})
}
