package postgres

import (
	"context"
	neturl "net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/agentmem"
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
		FROM pg_dist_partition WHERE logicalrelid::regclass::text IN ('sessions', 'entries', 'feed', 'feed_cursors') ORDER BY 1`)
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
	if len(got) != 3 {
		t.Fatalf("distributed tables: %+v, want entries, feed and sessions", got)
	}
	for _, d := range got {
		if d.column != "tenant" || d.group != got[0].group {
			t.Fatalf("distributed tables: %+v, want all by tenant, in one co-location group", got)
		}
	}
}

// TestCitusSingleShard runs every store operation that serves a request
// on Citus with citus.log_remote_commands on and checks, from the
// commands the coordinator sends, that each one touches one worker and
// one shard group (the tenant's): no request runs a cross-shard query or
// transaction.
func TestCitusSingleShard(t *testing.T) {
	url := testenv.CitusURL(t)
	schema := freshSchema(t, url)
	ctx := context.Background()
	setup := openAt(t, url, Options{Schema: schema})

	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["citus.log_remote_commands"] = "on"
	var (
		mu      sync.Mutex
		notices []*pgconn.Notice
	)
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		notices = append(notices, n)
		mu.Unlock()
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st := &Store{pool: pool, clock: time.Now, schema: schema}

	// The hash range of each shard: the shards of one group share it.
	rangeOf := map[string]string{}
	rows, err := setup.pool.Query(ctx, `SELECT shardid::text, shardminvalue FROM pg_dist_shard WHERE shardminvalue IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	var id, lo string
	if _, err := pgx.ForEachRow(rows, []any{&id, &lo}, func() error { rangeOf[id] = lo; return nil }); err != nil {
		t.Fatal(err)
	}
	shardRE := regexp.MustCompile(`_(\d{6,})\b`)
	nodeRE := regexp.MustCompile(`on server \S+@(\S+)`)

	check := func(op string, fn func() error) {
		t.Helper()
		mu.Lock()
		notices = nil
		mu.Unlock()
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		mu.Lock()
		defer mu.Unlock()
		nodes, groups := map[string]bool{}, map[string]bool{}
		for _, n := range notices {
			if !strings.HasPrefix(n.Message, "issuing ") {
				continue
			}
			if m := nodeRE.FindStringSubmatch(n.Detail); m != nil {
				nodes[m[1]] = true
			}
			for _, m := range shardRE.FindAllStringSubmatch(n.Message, -1) {
				if r, ok := rangeOf[m[1]]; ok {
					groups[r] = true
				}
			}
		}
		if len(nodes) != 1 || len(groups) != 1 {
			var msgs []string
			for _, n := range notices {
				msgs = append(msgs, n.Message+" ("+n.Detail+")")
			}
			t.Fatalf("%s touched %d workers and %d shard groups, want 1 and 1:\n%s", op, len(nodes), len(groups), strings.Join(msgs, "\n"))
		}
	}
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
