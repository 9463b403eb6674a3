// Package citustest checks, on a Citus cluster, where the statements of
// an operation run: that a request of agentmem's touches one worker and
// one shard group (its tenant's), never several in one transaction.
//
// A Watcher turns on citus.log_remote_commands for every pool the
// PostgreSQL backends open (pgdb.ConfigHook) and records the commands
// the coordinator reports sending, with the worker each went to.
package citustest

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/agentmem/internal/pgdb"
)

// Watcher records the remote commands of the pools opened while it
// watches. Tests that use it must not run in parallel with others of
// their package (the hook is global).
type Watcher struct {
	// OnePhase makes SingleShard fail an operation that committed in two
	// phases (PREPARE TRANSACTION), whose workers commit after the
	// coordinator. The store's feed cannot allow that: a reader would see
	// the coordinator's transaction ended before its rows (see
	// store/postgres's doc).
	OnePhase bool
	url      string
	mu       sync.Mutex
	notices  []*pgconn.Notice
}

// Watch starts watching the pools opened from now until the test ends;
// url is the coordinator's (to read the shards' placement).
func Watch(t testing.TB, url string) *Watcher {
	t.Helper()
	w := &Watcher{url: url}
	prev := pgdb.ConfigHook
	pgdb.ConfigHook = func(cfg *pgxpool.Config) {
		cfg.ConnConfig.RuntimeParams["citus.log_remote_commands"] = "on"
		cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
			w.mu.Lock()
			w.notices = append(w.notices, n)
			w.mu.Unlock()
		}
	}
	t.Cleanup(func() { pgdb.ConfigHook = prev })
	return w
}

var (
	shardRE = regexp.MustCompile(`_(\d{6,})\b`)
	nodeRE  = regexp.MustCompile(`on server \S+@(\S+)`)
)

// SingleShard runs fn, the operation op, and fails the test unless the
// commands it made the coordinator send went to exactly one worker and
// touched the shards of exactly one shard group (those of one hash
// range: one tenant's).
func (w *Watcher) SingleShard(t testing.TB, op string, fn func() error) {
	t.Helper()
	w.mu.Lock()
	w.notices = nil
	w.mu.Unlock()
	if err := fn(); err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	ranges := w.shardRanges(t)
	w.mu.Lock()
	defer w.mu.Unlock()
	nodes, groups := map[string]bool{}, map[string]bool{}
	for _, n := range w.notices {
		if !strings.HasPrefix(n.Message, "issuing ") {
			continue
		}
		if w.OnePhase && strings.HasPrefix(n.Message, "issuing PREPARE TRANSACTION") {
			t.Errorf("%s committed in two phases (%s)", op, n.Message)
		}
		if m := nodeRE.FindStringSubmatch(n.Detail); m != nil {
			nodes[m[1]] = true
		}
		for _, m := range shardRE.FindAllStringSubmatch(n.Message, -1) {
			if r, ok := ranges[m[1]]; ok {
				groups[r] = true
			}
		}
	}
	if len(nodes) != 1 || len(groups) != 1 {
		var msgs []string
		for _, n := range w.notices {
			msgs = append(msgs, n.Message+" ("+n.Detail+")")
		}
		t.Fatalf("%s touched %d workers and %d shard groups, want 1 and 1:\n%s", op, len(nodes), len(groups), strings.Join(msgs, "\n"))
	}
}

// shardRanges maps the ID of every hash-distributed shard to the low end
// of its hash range: the shards of one group share it.
func (w *Watcher) shardRanges(t testing.TB) map[string]string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, w.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT shardid::text, shardminvalue FROM pg_dist_shard WHERE shardminvalue IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var id, lo string
	if _, err := pgx.ForEachRow(rows, []any{&id, &lo}, func() error { out[id] = lo; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}
