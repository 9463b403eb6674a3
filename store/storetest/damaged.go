package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// damagedTests check what a store does with a session whose stored record
// does not decode (Config.Damage). A list leaves it out and reports it,
// on every page, with its tenant and ID. A read of it by ID fails with
// agentmem.ErrDamaged, never as missing or unavailable. It can be
// deleted, and Prune and the feed go past it. The other sessions are
// untouched, and the store still answers Ping.
func (s *suite) damagedTests() []namedTest {
	if s.cfg.Damage == nil {
		return []namedTest{{"Skipped", func(t *testing.T) { t.Skip("the backend cannot hold a damaged record (Config.Damage is nil)") }}}
	}
	return []namedTest{
		{"ListSkipsAndReports", func(t *testing.T) {
			e := s.open(t)
			for i := range 6 {
				e.create(store.CreateRequest{ID: fmt.Sprintf("s%d", i), Tenant: "t", Metadata: map[string]string{"n": fmt.Sprint(i)}})
				e.clock.Advance(time.Second)
			}
			e.create(store.CreateRequest{ID: "s1", Tenant: "other"})
			e.damage("t", "s1")
			e.damage("t", "s4")
			e.damage("t", "s5")
			for _, size := range []int{1, 2, 3, 50} {
				var healthy, damaged []string
				var reported []string
				var mu sync.Mutex
				ctx := agentmem.WithDamageReporter(e.ctx, func(d *agentmem.DamagedError) {
					mu.Lock()
					defer mu.Unlock()
					reported = append(reported, d.Tenant+"/"+d.ID)
				})
				req := store.ListRequest{Tenant: "t", PageSize: size}
				for pages := 0; ; pages++ {
					if pages > 20 {
						t.Fatalf("page size %d: List never ended", size)
					}
					resp, err := e.st.List(ctx, req)
					if err != nil {
						t.Fatalf("page size %d: List: %v", size, err)
					}
					if n := len(resp.Sessions) + len(resp.Damaged); n > size || (n == 0 && resp.NextPageToken != "") {
						t.Fatalf("page size %d: a page of %d sessions and %d damaged ones, next %q", size, len(resp.Sessions), len(resp.Damaged), resp.NextPageToken)
					}
					for _, sess := range resp.Sessions {
						healthy = append(healthy, sess.ID)
						if sess.Metadata["n"] != sess.ID[1:] {
							t.Errorf("session %s listed with metadata %v", sess.ID, sess.Metadata)
						}
					}
					for _, d := range resp.Damaged {
						e.wantDamaged(d, "t", "", fmt.Sprintf("page size %d: List", size))
						damaged = append(damaged, d.ID)
					}
					if resp.NextPageToken == "" {
						break
					}
					req.PageToken = resp.NextPageToken
				}
				if want := []string{"s3", "s2", "s0"}; !slices.Equal(healthy, want) {
					t.Errorf("page size %d: healthy sessions listed %v, want %v", size, healthy, want)
				}
				if want := []string{"s5", "s4", "s1"}; !slices.Equal(damaged, want) {
					t.Errorf("page size %d: damaged sessions reported %v, want %v", size, damaged, want)
				}
				if want := []string{"t/s5", "t/s4", "t/s1"}; !slices.Equal(reported, want) {
					t.Errorf("page size %d: damaged sessions reported to the context %v, want %v", size, reported, want)
				}
			}
			// Across tenants, and filtered.
			all := e.listAll(store.ListRequest{PageSize: 2}, 0)
			if want := []string{"s1", "s3", "s2", "s0"}; !slices.Equal(all, want) {
				t.Errorf("List of every tenant: %v, want %v", all, want)
			}
		}},
		{"ReadByIDFails", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "bad", Tenant: "t"})
			e.appendSteps("t/bad", systemStep("sys"), taskStep("task", "x"))
			e.create(store.CreateRequest{ID: "good", Tenant: "t"})
			e.appendSteps("t/good", systemStep("sys"), taskStep("task", "x"))
			e.damage("t", "bad")
			_, err := e.st.Get(e.ctx, "t", "bad")
			e.wantDamagedErr(err, "t", "bad", "Get")
			// Its head (its keys and log) is sound.
			if h, err := e.st.Head(e.ctx, "t", "bad"); err != nil || h.LastSeq != 2 {
				t.Errorf("ReadHead of the damaged session: %d, %v; want its last seq, 2", h.LastSeq, err)
			}
			_, err = e.st.Read(e.ctx, store.ReadRequest{Tenant: "t", SessionID: "bad"})
			e.wantDamagedErr(err, "t", "bad", "Read")
			_, err = e.st.Read(e.ctx, store.ReadRequest{Tenant: "t", SessionID: "bad", WorkingSet: true})
			e.wantDamagedErr(err, "t", "bad", "Read of the working set")
			_, err = e.st.Append(e.ctx, store.AppendRequest{Tenant: "t", SessionID: "bad", Steps: []agentmem.Step{actionStep("a")}})
			e.wantDamagedErr(err, "t", "bad", "Append")
			_, err = e.st.Create(e.ctx, store.CreateRequest{Tenant: "t", ID: "branch", ParentID: "bad"})
			e.wantDamagedErr(err, "t", "bad", "Create of a branch")
			if got := e.get("t/good"); got.LastSeq != 2 {
				t.Errorf("the healthy session: %+v", got)
			}
			e.appendSteps("t/good", actionStep("a"))
			if ws := e.workingSet("t/good"); len(ws) != 3 {
				t.Errorf("the healthy session's working set has %d steps", len(ws))
			}
			if e.st.Supports(store.CanPing) {
				if err := e.st.Ping(e.ctx); err != nil {
					t.Errorf("Ping with a damaged session: %v", err)
				}
			}
		}},
		{"DeleteAndPrune", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "gone", Tenant: "t"})
			e.appendSteps("t/gone", taskStep("task", "x"))
			e.create(store.CreateRequest{ID: "old1", Tenant: "t", TTL: time.Minute})
			e.create(store.CreateRequest{ID: "old2", Tenant: "t", TTL: time.Minute})
			e.create(store.CreateRequest{ID: "old3", Tenant: "t", TTL: time.Minute})
			e.damage("t", "gone")
			e.damage("t", "old2")
			if err := e.st.Delete(e.ctx, "t", "gone"); err != nil {
				t.Fatalf("Delete of a damaged session: %v", err)
			}
			_, err := e.st.Get(e.ctx, "t", "gone")
			e.wantErr(err, agentmem.ErrNotFound, "Get after Delete")
			e.clock.Advance(2 * time.Minute)
			resp, err := e.st.Prune(e.ctx, store.PruneRequest{})
			if err != nil {
				t.Fatalf("Prune past a damaged expired session: %v", err)
			}
			if resp.SessionsDeleted != 3 {
				t.Errorf("Prune deleted %d sessions, want 3 (the damaged one too)", resp.SessionsDeleted)
			}
			if ids := e.listAll(store.ListRequest{}, 0); len(ids) != 0 {
				t.Errorf("after Prune: %v", ids)
			}
		}},
		{"Feed", func(t *testing.T) {
			e := s.open(t)
			if _, ok := e.st.Feed(); !ok {
				t.Skip("not a store.Feed")
			}
			f := e.feed()
			e.create(store.CreateRequest{ID: "bad", Tenant: "t"})
			e.appendSteps("t/bad", taskStep("task", "x"))
			e.create(store.CreateRequest{ID: "good", Tenant: "t"})
			e.appendSteps("t/good", taskStep("task", "y"))
			e.damage("t", "bad")
			var reported []string
			e.ctx = agentmem.WithDamageReporter(e.ctx, func(d *agentmem.DamagedError) { reported = append(reported, d.ID) })
			changes := e.drain(f, store.FeedCursor{}, 0)
			var bad, good int
			for _, c := range changes {
				if c.Kind != store.ChangeAppend {
					continue
				}
				if c.Entry == nil || c.Session == nil {
					t.Errorf("change %+v lacks its entry or session", c)
					continue
				}
				switch c.SessionID {
				case "bad":
					bad++
				case "good":
					good++
				}
			}
			if bad != 1 || good != 1 {
				t.Errorf("the feed has %d appends to the damaged session and %d to the healthy one, want 1 and 1", bad, good)
			}
			if !slices.Contains(reported, "bad") {
				t.Errorf("the feed did not report the damaged session (reported %v)", reported)
			}
		}},
	}
}

// damage damages a stored session (Config.Damage).
func (e *env) damage(tenant, id string) {
	e.t.Helper()
	e.s.cfg.Damage(e.t, e.st, tenant, id)
}

// wantDamaged checks a reported damaged session: its tenant, and its ID
// when id is set, and its error.
func (e *env) wantDamaged(d *agentmem.DamagedError, tenant, id, what string) {
	e.t.Helper()
	if d == nil || d.Kind != "session" || d.Tenant != tenant || (id != "" && d.ID != id) || d.Err == nil || !errors.Is(d, agentmem.ErrDamaged) {
		e.t.Errorf("%s: damaged %+v, want session %s/%s with its error", what, d, tenant, id)
	}
}

// wantDamagedErr checks that err reports the damaged session tenant/id,
// and nothing else (not missing, not unavailable).
func (e *env) wantDamagedErr(err error, tenant, id, what string) {
	e.t.Helper()
	var d *agentmem.DamagedError
	if !errors.As(err, &d) || errors.Is(err, agentmem.ErrNotFound) || errors.Is(err, agentmem.ErrUnavailable) {
		e.t.Errorf("%s of a damaged session: %v, want a *DamagedError", what, err)
		return
	}
	e.wantDamaged(d, tenant, id, what)
}
