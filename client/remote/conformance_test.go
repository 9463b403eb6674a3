package remote_test

import (
	"flag"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/client/remote"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/store/storetest"
)

// unsupported lists the conformance subtests a Store cannot pass, each
// with the reason: what the HTTP API does not offer. Keys are subtest
// names below TestConformance ("Group/Test"); a key ending in "/" covers a
// whole group.
var unsupported = map[string]string{
	// A session's tenant is the API key's: one client cannot create
	// sessions in tenants of its choosing.
	"Sessions/CreateAllFields": tenantReason,
	"List/Filters":             tenantReason,
	"List/ByParentTenant":      tenantReason,
	"BadInput/CreateFields":    tenantReason,
	"Messages/Tenant":          tenantReason,
	"Conversations/Tenants":    tenantReason,
	"Agents/Tenants":           tenantReason,
	"Tenants/":                 tenantReason,

	// Leases coordinate the processes that follow one store's change
	// feed; a remote store has no feed, and its server follows its own.
	"Leases/": "the feed's leases are the server's own (a remote store has no feed)",

	// GET /v1/sessions/{id}/steps does not say when each step was
	// appended (Entry.Time), and POST .../steps gives a step without a
	// time the server's clock where a store keeps it zero.
	"Append/SeqsFromOne":     "the read route has no entry time for step entries (Entry.Time is zero)",
	"Append/EveryStepKind":   "the server gives a step without a time the server's clock; a store keeps it zero",
	"Append/StepAtSizeLimit": "the server adds a time to a step without one, which makes a step at the size limit too large",

	// The server stores a session's settings as they apply, not as
	// given.
	"Sessions/ExtractFactsSetting": "the server refuses extract_facts true without a fact extractor, and gives a branch its parent's",
	"Sessions/SettingsAsGiven":     "the server stores the settings that apply: the default pinning, auto_compact's defaults, a branch its parent's; and it refuses the llm summarizer without an LLM",

	// A branch created through the fork route gets its parent's user
	// and agent.
	"Branches/SeesParentUpToFork": "the fork route gives a branch its parent's agent; the test asks for another",

	// Moving a session into a tenant recreates it exactly, which needs
	// the store's Importer; the API has no route for it.
	"AssignTenant/": "the HTTP API cannot recreate a session exactly (no store.Importer); agentmem keys assign-sessions runs on the store",

	// The routes fingerprint the requests they are sent themselves, from
	// their Idempotency-Key: a Store's Append does not send
	// AppendRequest.Idempotency, and its answer does not say whether it
	// was a retry. The server's tests check the keys on every route.
	"IdempotencyKeys/": "the API fingerprints each route's requests itself: Append sends no store.Idempotency, and its answer has no Retried",

	// There is no route for Prune: retention is the server's business.
	"Retention/TTLExpiry":                       pruneReason,
	"Retention/PersistentAndSessionNeverExpire": pruneReason,
	"Prune/ExpiredSessions":                     pruneReason,
	"Prune/ExpiredParentKeepsBranch":            pruneReason,
	"Prune/CoveredAfterDeletingAMiddleBranch":   pruneReason,
	"Prune/CoveredBefore":                       pruneReason,
	"Prune/CoveredKeepsBranchWorkingSet":        pruneReason,
	"Amendments/PruneKeepsAmendedSteps":         pruneReason,

	// The change feed is the store's own, for what the server derives
	// from the log (its recall index); the API does not expose it.
	"Feed/": "the HTTP API has no change feed (store.Feed): the server follows its own store's",

	// The server answers 404 to DELETE of an expired session that has
	// not been pruned yet, where store.Delete succeeds.
	"Retention/DeleteExpired": "DELETE /v1/sessions/{id} answers 404 for an expired session Prune has not deleted yet; store.Delete succeeds",
}

const (
	tenantReason = "the server puts every session in the API key's tenant"
	pruneReason  = "the API has no Prune route (Prune is an *UnsupportedError)"
)

// skipUnsupported skips t if the conformance suite's subtest it runs is
// in unsupported. storetest.Config has no way to declare unsupported
// features, but New runs inside each subtest, so it can skip it.
func skipUnsupported(t *testing.T) {
	t.Helper()
	name := t.Name()
	_, name, _ = strings.Cut(name, "/") // drop "TestConformance"
	for k, why := range unsupported {
		if name == k || (strings.HasSuffix(k, "/") && strings.HasPrefix(name, k)) {
			skipped.Store(k, true)
			t.Skip("not supported over HTTP: " + why)
		}
	}
}

// skipped records the keys of unsupported that skipped a subtest, so a
// renamed subtest does not leave a stale key that skips nothing.
var skipped sync.Map

// newTestServer serves the real server.Handler over a new memstore, both
// on clock, and returns it with the store.
func newTestServer(t *testing.T, clock func() time.Time, opts ...func(*server.Config)) (*httptest.Server, *store.Store) {
	t.Helper()
	mem := memstore.New(memstore.Options{Clock: clock})
	cfg := server.Config{Store: mem, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
		mem.Close()
	})
	return ts, mem
}

// TestConformance runs the store conformance suite against a Store of
// the real server.Handler over a memstore, both on the suite's clock.
// Besides the subtests of unsupported, the suite skips Import (a Store
// is not a store.Importer) and Reopen (no Config.Reopen: its test needs
// compaction records and Prune).
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Config{
		New: func(t *testing.T, clock func() time.Time) store.Driver {
			skipUnsupported(t)
			ts, _ := newTestServer(t, clock)
			c, err := client.New(ts.URL)
			if err != nil {
				t.Fatal(err)
			}
			return remote.NewDriver(c)
		},
	})
	if t.Failed() {
		return
	}
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() != "" && f.Value.String() != "TestConformance" {
		return // a filtered run skips only some
	}
	for k := range unsupported {
		if _, ok := skipped.Load(k); !ok {
			t.Errorf("unsupported[%q] skipped no subtest: remove it, or fix its name", k)
		}
	}
}
