package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/store"
)

// TestCitusRebalance adds a worker to a Citus cluster and moves shards to
// it (citus_rebalance_start) while clients append to and read the
// sessions of many tenants: no acknowledged append may fail or be lost,
// nothing may be stored twice, every read sees its session's log as
// acknowledged so far, every session's context is the same after the
// move as before it (plus what was appended since), and the feed holds
// every append exactly once. A read that misses acknowledged steps does
// not end the test: the appends go on, and the end tells, from the log
// as it is then, whether those steps were lost or only unseen for a
// while.
//
// The cluster's nodes must commit synchronously (citusDatabase checks):
// with synchronous_commit off, Citus' shard move can lose a write
// acknowledged just before its switch-over.
//
// The cluster is one of its own: a new database on the nodes of the test
// cluster (AGENTMEM_TEST_CITUS_URL), with the coordinator and its two
// workers, into which the spare node (AGENTMEM_TEST_CITUS_SPARE) is added,
// so that the rebalance moves this test's shards only and other tests go
// on undisturbed.
func TestCitusRebalance(t *testing.T) {
	base := testenv.CitusURL(t)
	spare := testenv.CitusSpare(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	dbURL, coord, workers := citusDatabase(t, ctx, base)
	spareHost, sparePort := splitHostPort(t, spare)
	st, err := OpenDriver(ctx, dbURL, Options{MaxConns: 24})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	admin := connect(t, ctx, dbURL)
	if n := queryCount(t, ctx, admin, `SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'entries'::regclass`); n != len(workers) {
		t.Fatalf("entries' shards are on %d nodes, want the %d workers", n, len(workers))
	}

	const tenants, perTenant, clients = 12, 2, 8
	var keys []store.Key
	for tn := range tenants {
		for i := range perTenant {
			k := store.Key{Tenant: fmt.Sprintf("tenant-%02d", tn), ID: fmt.Sprintf("s%d", i)}
			if _, err := st.Create(ctx, store.CreateRequest{Tenant: k.Tenant, ID: k.ID}); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
	}

	// acked[k] is the step IDs acknowledged for k, in order; each session
	// has one writer (its client), so the order is the log's. missed[k]
	// is the first read of k that did not see its log as acknowledged.
	var (
		mu        sync.Mutex
		acked     = map[store.Key][]string{}
		missed    = map[store.Key]readMiss{}
		failures  []string
		appends   atomic.Int64
		readsDone atomic.Int64
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []store.Key
			for i, k := range keys {
				if i%clients == c {
					mine = append(mine, k)
				}
			}
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				k := mine[n%len(mine)]
				id := fmt.Sprintf("%s-%s-%d", k.Tenant, k.ID, n)
				step := &agentmem.ActionStep{StepInfo: agentmem.StepInfo{ID: id}, ModelOutput: "step " + id}
				if _, err := st.Append(ctx, store.AppendRequest{Tenant: k.Tenant, SessionID: k.ID, Steps: []agentmem.Step{step}}); err != nil {
					fail("append %s: %v", id, err)
					return
				}
				mu.Lock()
				acked[k] = append(acked[k], id)
				want := slices.Clone(acked[k])
				mu.Unlock()
				appends.Add(1)
				// Read it back: the log as acknowledged so far.
				r, err := st.Read(ctx, store.ReadRequest{Tenant: k.Tenant, SessionID: k.ID})
				if err != nil {
					fail("read %s/%s: %v", k.Tenant, k.ID, err)
					return
				}
				if got := stepIDs(r.Entries); !slices.Equal(got, want) {
					// Go on appending: the log at the end tells whether
					// what this read missed was lost.
					mu.Lock()
					if _, ok := missed[k]; !ok {
						missed[k] = readMiss{after: id, missing: without(want, got)}
						failures = append(failures, fmt.Sprintf("read %s/%s after %s: %s", k.Tenant, k.ID, id, describeLog(r.Entries, r.Session.LastSeq, want)))
					}
					mu.Unlock()
					continue
				}
				readsDone.Add(1)
			}
		}()
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond) // polling progress counters of other goroutines
		}
	}
	waitFor("the first appends", func() bool { return appends.Load() >= 100 })

	// The contexts before the move.
	before := map[store.Key][]string{}
	for _, k := range keys {
		r, err := st.Read(ctx, store.ReadRequest{Tenant: k.Tenant, SessionID: k.ID, WorkingSet: true})
		if err != nil {
			t.Fatal(err)
		}
		before[k] = workingIDs(r.Steps)
	}

	if _, err := admin.Exec(ctx, `SELECT citus_add_node($1, $2)`, spareHost, sparePort); err != nil {
		t.Fatalf("citus_add_node(%s): %v", spare, err)
	}
	atAdd := appends.Load()
	var job int64
	if err := admin.QueryRow(ctx, `SELECT citus_rebalance_start()`).Scan(&job); err != nil {
		t.Fatalf("citus_rebalance_start: %v", err)
	}
	if _, err := admin.Exec(ctx, `SELECT citus_rebalance_wait()`); err != nil {
		t.Fatalf("citus_rebalance_wait: %v", err)
	}
	var state string
	if err := admin.QueryRow(ctx, `SELECT state::text FROM pg_dist_background_job WHERE job_id = $1`, job).Scan(&state); err != nil || state != "finished" {
		t.Fatalf("rebalance job %d: state %q, %v", job, state, err)
	}
	moved := queryCount(t, ctx, admin, `SELECT count(*) FROM citus_shards WHERE nodeport = $1`, sparePort)
	if moved == 0 {
		t.Fatalf("no shard moved to the new worker %s", spare)
	}
	during := appends.Load() - atAdd
	// Go on a little on the new layout, then stop.
	target := appends.Load() + 50
	waitFor("appends after the move", func() bool { return appends.Load() >= target })
	close(stop)
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	if len(missed) > 0 {
		// Lost, or unseen for a while? The logs as they are now.
		for k, m := range missed {
			r, err := st.Read(ctx, store.ReadRequest{Tenant: k.Tenant, SessionID: k.ID})
			if err != nil {
				t.Errorf("read %s/%s at the end: %v", k.Tenant, k.ID, err)
				continue
			}
			now := describeLog(r.Entries, r.Session.LastSeq, acked[k])
			switch lost := without(m.missing, stepIDs(r.Entries)); {
			case len(m.missing) == 0:
				t.Errorf("%s/%s: the read after %s had steps that were not acknowledged; the log now: %s", k.Tenant, k.ID, m.after, now)
			case len(lost) > 0:
				t.Errorf("%s/%s: %v, acknowledged but missing from the read after %s, are missing from the log at the end too: lost; the log now: %s",
					k.Tenant, k.ID, lost, m.after, now)
			default:
				t.Errorf("%s/%s: %v, missing from the read after %s, are in the log at the end: unseen for a while, not lost; the log now: %s",
					k.Tenant, k.ID, m.missing, m.after, now)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d appends and %d reads, %d of the appends while the worker was added and shards moved (%d shards, %v to the new worker); workers before: %v, coordinator %s",
		appends.Load(), readsDone.Load(), during, moved, spare, workers, coord)
	if during == 0 {
		t.Fatal("no append went through while the shards moved")
	}

	// Every acknowledged step is stored once, in order, nothing else is;
	// contexts kept what they held before the move.
	total := 0
	for _, k := range keys {
		r, err := st.Read(ctx, store.ReadRequest{Tenant: k.Tenant, SessionID: k.ID})
		if err != nil {
			t.Fatal(err)
		}
		got := stepIDs(r.Entries)
		if !slices.Equal(got, acked[k]) {
			t.Fatalf("%s/%s at the end: %s", k.Tenant, k.ID, describeLog(r.Entries, r.Session.LastSeq, acked[k]))
		}
		for i, e := range r.Entries {
			if e.Seq != int64(i+1) {
				t.Fatalf("%s/%s: entry %d has seq %d", k.Tenant, k.ID, i, e.Seq)
			}
		}
		w, err := st.Read(ctx, store.ReadRequest{Tenant: k.Tenant, SessionID: k.ID, WorkingSet: true})
		if err != nil {
			t.Fatal(err)
		}
		if ctxNow := workingIDs(w.Steps); !slices.Equal(ctxNow[:min(len(before[k]), len(ctxNow))], before[k]) || !slices.Equal(ctxNow, acked[k]) {
			t.Fatalf("%s/%s: context %v, before the move %v, acknowledged %v", k.Tenant, k.ID, ctxNow, before[k], acked[k])
		}
		total += len(got)
	}

	// The feed holds every append once.
	seen := map[string]int{}
	var cur store.FeedCursor
	head, err := st.FeedHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for {
		resp, err := st.ReadFeed(ctx, store.FeedRequest{After: cur, Limit: store.MaxFeedLimit})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range resp.Changes {
			if c.Kind == store.ChangeAppend {
				seen[fmt.Sprintf("%s/%s/%d", c.Tenant, c.SessionID, c.Seq)]++
			}
		}
		cur = resp.Next
		if !resp.More && resp.Through >= head {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the feed did not reach its head %d (Through %d)", head, resp.Through)
		}
		if !resp.More {
			time.Sleep(10 * time.Millisecond) // an older transaction holds the feed back: poll
		}
	}
	if len(seen) != total {
		t.Fatalf("the feed has %d distinct appends, the logs %d", len(seen), total)
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("the feed has append %s %d times", k, n)
		}
	}
}

// citusDatabase creates a database of its own on every node of the test
// cluster at base (the coordinator and the workers it lists) and on the
// spare, with the citus extension, and makes it a cluster of the same
// coordinator and workers; it is dropped on every node when the test
// ends. It returns the coordinator's URL for it, the coordinator's
// host:port and the workers'.
func citusDatabase(t *testing.T, ctx context.Context, base string) (dbURL, coord string, workers []string) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	coord = u.Host
	admin := connect(t, ctx, base)
	rows, err := admin.Query(ctx, `SELECT nodename || ':' || nodeport FROM pg_dist_node WHERE groupid <> 0 AND noderole = 'primary' ORDER BY nodeport`)
	if err != nil {
		t.Fatal(err)
	}
	workers, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(workers) < 2 {
		t.Fatalf("the test cluster's workers: %v, %v; want at least 2", workers, err)
	}
	b := make([]byte, 4)
	rand.Read(b)
	name := "agentmem_rebalance_" + hex.EncodeToString(b)
	nodes := append([]string{coord}, workers...)
	nodes = append(nodes, os.Getenv(testenv.CitusSpareEnv))
	at := func(host, db string) string {
		v := *u
		v.Host, v.Path = host, "/"+db
		return v.String()
	}
	for _, n := range nodes {
		c := connect(t, ctx, at(n, u.Path[1:]))
		if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			t.Fatalf("CREATE DATABASE on %s: %v", n, err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := pgx.Connect(ctx, at(n, u.Path[1:]))
			if err != nil {
				t.Errorf("drop database on %s: %v", n, err)
				return
			}
			defer c.Close(ctx)
			if _, err := c.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
				t.Errorf("drop database on %s: %v", n, err)
			}
		})
		nc := connect(t, ctx, at(n, name))
		if _, err := nc.Exec(ctx, "CREATE EXTENSION citus"); err != nil {
			t.Fatalf("CREATE EXTENSION citus on %s: %v", n, err)
		}
		// What Citus's own connections to the node get: the same user and
		// database.
		var syncCommit string
		if err := nc.QueryRow(ctx, "SHOW synchronous_commit").Scan(&syncCommit); err != nil {
			t.Fatal(err)
		}
		if syncCommit == "off" {
			t.Fatalf("%s runs with synchronous_commit = off: a shard move can then lose a write acknowledged just before its switch-over "+
				"(Citus waits for the new placement to reach pg_current_wal_lsn(), which an asynchronous commit may not have reached; "+
				"see docs/operations.md, Adding a worker); start the nodes with synchronous_commit on, as scripts/citus-start.sh does", n)
		}
	}
	dbURL = at(coord, name)
	c := connect(t, ctx, dbURL)
	host, port := splitHostPort(t, coord)
	if _, err := c.Exec(ctx, "SELECT citus_set_coordinator_host($1, $2)", host, port); err != nil {
		t.Fatal(err)
	}
	for _, w := range workers {
		host, port := splitHostPort(t, w)
		if _, err := c.Exec(ctx, "SELECT citus_add_node($1, $2)", host, port); err != nil {
			t.Fatalf("citus_add_node(%s): %v", w, err)
		}
	}
	return dbURL, coord, workers
}

// connect opens a connection closed when the test ends.
func connect(t *testing.T, ctx context.Context, u string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func queryCount(t *testing.T, ctx context.Context, c *pgx.Conn, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := c.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func splitHostPort(t *testing.T, hp string) (string, int) {
	t.Helper()
	h, p, err := net.SplitHostPort(hp)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return h, port
}

// readMiss is a read that did not see its session's log as acknowledged:
// the append it followed, and the acknowledged steps it did not see.
type readMiss struct {
	after   string
	missing []string
}

// without returns the elements of a that are not in b.
func without(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// describeLog tells how a read log (entries, and its session's last_seq)
// differs from the steps acknowledged (want): the steps it misses, those
// it has that were not acknowledged, and its last entries as seq:ID, so
// that a gap in the numbering (a step lost after the next was numbered
// after it) shows from one that was never numbered.
func describeLog(entries []store.Entry, lastSeq int64, want []string) string {
	got := stepIDs(entries)
	var tail []string
	for _, e := range entries[max(0, len(entries)-5):] {
		id := "compaction"
		if e.Kind == store.StepEntry {
			id = e.Step.Info().ID
		}
		tail = append(tail, fmt.Sprintf("%d:%s", e.Seq, id))
	}
	return fmt.Sprintf("%d steps, want %d; missing %v, not acknowledged %v; last entries %v, session last_seq %d",
		len(got), len(want), without(want, got), without(got, want), tail, lastSeq)
}

func stepIDs(entries []store.Entry) []string {
	var ids []string
	for _, e := range entries {
		if e.Kind == store.StepEntry {
			ids = append(ids, e.Step.Info().ID)
		}
	}
	return ids
}

func workingIDs(steps []agentmem.Step) []string {
	var ids []string
	for _, s := range steps {
		ids = append(ids, s.Info().ID)
	}
	return ids
}
