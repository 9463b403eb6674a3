package sessionblocks_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
	blockspg "github.com/agentmem/agentmem/blocks/postgres"
	blockssqlite "github.com/agentmem/agentmem/blocks/sqlite"
	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/store/postgres"
	"github.com/agentmem/agentmem/store/sqlite"
	"github.com/agentmem/agentmem/store/storetest"
	"github.com/agentmem/agentmem/views"
	"github.com/agentmem/agentmem/views/sessionblocks"
)

// backend opens a session store and a blocks store on one database, on
// the clock the test moves; a second call of the same backend opens the same database again, as a
// process that restarts does.
type backend struct {
	name string
	open func(t *testing.T, c *storetest.Clock) (*store.Store, blocks.Store)
}

func backends(t *testing.T) []backend {
	dir := t.TempDir()
	path := filepath.Join(dir, "agentmem.db")
	var mem *store.Store
	var memBlocks blocks.Store
	return []backend{
		{"memory", func(t *testing.T, c *storetest.Clock) (*store.Store, blocks.Store) {
			// The in-memory stores outlive a "restart": the cleaner
			// and the service are new, the data and the cursor kept.
			if mem == nil {
				mem, memBlocks = memstore.New(memstore.Options{Clock: c.Now}), blocks.NewMemStore()
				t.Cleanup(func() { mem.Close(); memBlocks.Close() })
			}
			return mem, memBlocks
		}},
		{"sqlite", func(t *testing.T, c *storetest.Clock) (*store.Store, blocks.Store) {
			st, err := sqlite.Open(context.Background(), path, sqlite.Options{Clock: c.Now})
			if err != nil {
				t.Fatal(err)
			}
			bs, err := blockssqlite.Open(context.Background(), path, blockssqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close(); bs.Close() })
			return st, bs
		}},
		{"postgres", func(t *testing.T, c *storetest.Clock) (*store.Store, blocks.Store) {
			url := testenv.PostgresURL(t)
			schema := pgSchemas[t.Name()]
			if schema == "" {
				schema = testenv.FreshSchema(t, url)
				pgSchemas[t.Name()] = schema
			}
			st, err := postgres.Open(context.Background(), url, postgres.Options{Schema: schema, Clock: c.Now})
			if err != nil {
				t.Fatal(err)
			}
			bs, err := blockspg.Open(context.Background(), url, blockspg.Options{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close(); bs.Close() })
			return st, bs
		}},
	}
}

// pgSchemas are the PostgreSQL schemas of the tests, by test name, so that
// a restart opens the same one.
var pgSchemas = map[string]string{}

// process is what one process has over the stores: a sessions service
// with memory blocks.
type process struct {
	st  *store.Store
	bm  *blocks.Memory
	svc *sessions.Service
}

func start(t *testing.T, b backend, c *storetest.Clock) *process {
	t.Helper()
	st, bs := b.open(t, c)
	bm := blocks.New(bs, blocks.Options{Clock: c.Now})
	svc, err := sessions.New(sessions.Config{Store: st, Clock: c.Now, Blocks: bm})
	if err != nil {
		t.Fatal(err)
	}
	return &process{st: st, bm: bm, svc: svc}
}

func (p *process) create(t *testing.T, id string, ttl time.Duration) {
	t.Helper()
	if _, err := p.svc.Create(context.Background(), store.CreateRequest{ID: id, UserID: "alice", TTL: ttl}); err != nil {
		t.Fatal(err)
	}
}

func (p *process) set(t *testing.T, owner blocks.Owner, label string) {
	t.Helper()
	if _, err := p.bm.Set(context.Background(), blocks.SetRequest{Key: blocks.Key{Owner: owner, Label: label}, Value: label + " of " + owner.String()}); err != nil {
		t.Fatal(err)
	}
}

// labels returns the labels of an owner's blocks.
func (p *process) labels(t *testing.T, owner blocks.Owner) []string {
	t.Helper()
	bs, err := p.bm.List(context.Background(), "", owner)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range bs {
		out = append(out, b.Label)
	}
	return out
}

// clean runs a cleaner under consumer until it has applied every change
// committed so far.
func (p *process) clean(t *testing.T, consumer string) {
	t.Helper()
	c, stop := sessionblocks.Start(p.svc, nil, views.Options{Consumer: consumer, OnError: func(err error) { t.Errorf("cleaner: %v", err) }})
	if c == nil {
		t.Fatal("no cleaner: the store has no feed")
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCleansAfterCrash: sessions deleted while no cleaner ran (expired
// and pruned by retention, or deleted from the store by a process that
// stopped before their blocks) lose their blocks once a cleaner follows
// the feed after a restart; a session made again with a deleted one's ID
// keeps the blocks it wrote itself; the other sessions' and the user's
// blocks stay. Applying the feed again (a crash before the cleaner's
// cursor was saved) deletes nothing more.
func TestCleansAfterCrash(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			c := storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			p := start(t, b, c)
			p.create(t, "expiring", time.Hour)
			p.create(t, "kept", 0)
			p.create(t, "remade", 0)
			for _, id := range []string{"expiring", "kept", "remade"} {
				p.set(t, blocks.Session(id), "notes")
			}
			p.set(t, blocks.User("alice"), "persona")

			// No cleaner runs: retention deletes the expired session, a
			// delete reaches the store but not the blocks, and the ID is
			// used again.
			c.Advance(2 * time.Hour)
			if resp, err := p.st.Prune(context.Background(), store.PruneRequest{}); err != nil || resp.SessionsDeleted != 1 {
				t.Fatalf("Prune: %+v, %v", resp, err)
			}
			if err := p.st.Delete(context.Background(), "", "remade"); err != nil {
				t.Fatal(err)
			}
			c.Advance(time.Second)
			p.create(t, "remade", 0)
			c.Advance(time.Second)
			p.set(t, blocks.Session("remade"), "fresh")
			if got := p.labels(t, blocks.Session("expiring")); !slices.Equal(got, []string{"notes"}) {
				t.Fatalf("before any cleaner: the expired session's blocks %v", got)
			}

			// A restart: a new process follows the feed from the
			// cleaner's cursor (none yet: the start of the feed).
			p = start(t, b, c)
			p.clean(t, sessionblocks.Consumer)
			want := map[blocks.Owner][]string{
				blocks.Session("expiring"): nil,
				blocks.Session("kept"):     {"notes"},
				blocks.Session("remade"):   {"fresh"},
				blocks.User("alice"):       {"persona"},
			}
			check := func(when string) {
				t.Helper()
				for owner, w := range want {
					if got := p.labels(t, owner); !slices.Equal(got, w) {
						t.Errorf("%s: %s has blocks %v, want %v", when, owner, got, w)
					}
				}
			}
			check("after the cleaner caught up")

			// The feed applied again from its start, as after a crash
			// before the cursor was saved.
			p.clean(t, "session-blocks-again")
			check("after the feed was applied again")
		})
	}
}

// TestDeleteThenPrune: the service's Delete deletes the session's blocks
// at once; a later session of the ID starts without them, and a cleaner
// that reads the deletion after the new session wrote a block keeps it.
func TestDeleteThenPrune(t *testing.T) {
	c := storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	p := start(t, backends(t)[0], c)
	p.create(t, "s", 0)
	p.set(t, blocks.Session("s"), "notes")
	if err := p.svc.Delete(context.Background(), "", "s"); err != nil {
		t.Fatal(err)
	}
	if got := p.labels(t, blocks.Session("s")); len(got) != 0 {
		t.Fatalf("after Delete: %v", got)
	}
	c.Advance(time.Second)
	p.create(t, "s", 0)
	p.set(t, blocks.Session("s"), "notes")
	p.clean(t, sessionblocks.Consumer)
	if got := p.labels(t, blocks.Session("s")); !slices.Equal(got, []string{"notes"}) {
		t.Fatalf("the new session's blocks after the cleaner: %v", got)
	}
	n, err := p.svc.CleanBlocks(context.Background(), "", "s")
	if err != nil || n != 0 {
		t.Fatalf("CleanBlocks of a live session's own blocks: %d, %v", n, err)
	}
	if _, err := p.bm.Get(context.Background(), blocks.Key{Owner: blocks.Session("s"), Label: "notes"}); errors.Is(err, agentmem.ErrNotFound) {
		t.Fatal("CleanBlocks deleted a live session's block")
	}
}
