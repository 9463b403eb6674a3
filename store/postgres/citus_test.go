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
// feed's cursors and leases tables of the coordinator, and as many shards as the
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
		FROM pg_dist_partition WHERE logicalrelid::regclass::text IN ('sessions', 'entries', 'feed', 'feed_cursors', 'feed_leases', 'idempotency_keys') ORDER BY 1`)
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
	keyed := store.AppendRequest{Tenant: "acme", SessionID: "a", Steps: step("k/0"), Idempotency: &store.Idempotency{Key: "k", Fingerprint: "f"}}
	check("append with an idempotency key", func() error {
		_, err := st.Append(ctx, keyed)
		return err
	})
	check("retried append with an idempotency key", func() error {
		r, err := st.Append(ctx, keyed)
		if err == nil && !r.Retried {
			t.Errorf("retried append with a key: %+v", r)
		}
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
	check("append to the branch with a key of its history", func() error {
		k := keyed
		k.SessionID = "b"
		r, err := st.Append(ctx, k)
		if err == nil && !r.Retried {
			t.Errorf("the branch's retry of its parent's keyed append: %+v", r)
		}
		return err
	})
	check("get", func() error {
		_, err := st.Get(ctx, "acme", "b")
		return err
	})
	check("read", func() error {
		r, err := st.Read(ctx, store.ReadRequest{Tenant: "acme", SessionID: "b"})
		if err == nil && len(r.Entries) != 5 {
			t.Errorf("read: %d entries, want 5", len(r.Entries))
		}
		return err
	})
	check("context (working set)", func() error {
		r, err := st.Read(ctx, store.ReadRequest{Tenant: "acme", SessionID: "b", WorkingSet: true})
		if got := workingIDs(r.Steps); err == nil && !slices.Equal(got, []string{"a2", "k/0", "b1"}) {
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

// TestCitusUpgradeDistributesKeys opens a Citus schema laid out before
// migration 7 (its idempotency_keys table and what the later migrations
// made dropped, their version rows removed) again: the migration
// creates the table and the runner distributes it by tenant, co-located
// with the tenant's sessions, so a keyed append and its retry go to one
// shard group; the later ones apply to the distributed tables.
func TestCitusUpgradeDistributesKeys(t *testing.T) {
	url := testenv.CitusURL(t)
	ctx := context.Background()
	schema := freshSchema(t, url)
	old := openAt(t, url, Options{Schema: schema})
	execSQL(t, old, `DROP TABLE idempotency_keys`)
	execSQL(t, old, `DROP INDEX sessions_by_parent`)
	execSQL(t, old, `DROP TABLE feed_leases`)
	execSQL(t, old, `DELETE FROM agentmem_migrations WHERE component = 'sessions' AND version >= 7`)
	if _, err := old.Create(ctx, store.CreateRequest{Tenant: "acme", ID: "s"}); err != nil {
		t.Fatal(err)
	}
	old.Close()

	w := citustest.Watch(t, url)
	w.OnePhase = true
	st := openAt(t, url, Options{Schema: schema})
	if n := queryInt(t, st, `SELECT count(DISTINCT colocationid) FROM pg_dist_partition
		WHERE logicalrelid IN ('sessions'::regclass, 'idempotency_keys'::regclass)
		AND column_to_column_name(logicalrelid, partkey) = 'tenant'`); n != 1 ||
		queryInt(t, st, `SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'idempotency_keys'::regclass`) != 1 {
		t.Fatal("idempotency_keys is not distributed by tenant with sessions after the upgrade")
	}
	// Migration 8's index, created on the distributed sessions table,
	// serves a list of a session's branches.
	if _, err := st.Create(ctx, store.CreateRequest{Tenant: "acme", ID: "b", ParentID: "s"}); err != nil {
		t.Fatal(err)
	}
	if resp, err := st.List(ctx, store.ListRequest{Tenant: "acme", ParentID: "s"}); err != nil || len(resp.Sessions) != 1 || resp.Sessions[0].ID != "b" {
		t.Fatalf("the branches of s after the upgrade: %v %+v", err, resp)
	}
	req := store.AppendRequest{Tenant: "acme", SessionID: "s", Idempotency: &store.Idempotency{Key: "k", Fingerprint: "f"},
		Steps: []agentmem.Step{&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "k/0"}, Task: "t"}}}
	for _, op := range []string{"a keyed append", "its retry"} {
		w.SingleShard(t, op, func() error {
			r, err := st.Append(ctx, req)
			if err == nil && (r.Retried != (op == "its retry") || !slices.Equal(r.Seqs, []int64{1})) {
				t.Errorf("%s: %+v", op, r)
			}
			return err
		})
	}
}
