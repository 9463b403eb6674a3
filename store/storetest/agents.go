package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// store.Agents (the seeds' MemoryManager.get_memory) is built on Get,
// Create and List; these tests check that every backend gives each agent
// of a run one memory, whoever asks for it first.

func (e *env) agents(run string) *store.Agents {
	e.t.Helper()
	return e.tenantAgents("", run)
}

func (e *env) tenantAgents(tenant, run string) *store.Agents {
	e.t.Helper()
	a, err := store.OpenAgents(e.ctx, e.st, tenant, run, e.memOptions())
	if err != nil {
		e.t.Fatalf("OpenAgents(%q): %v", run, err)
	}
	e.t.Cleanup(func() { _ = a.Close(e.ctx) })
	return a
}

func (e *env) agentMemory(a *store.Agents, name string) *store.Bound {
	e.t.Helper()
	b, err := a.Memory(e.ctx, name)
	if err != nil {
		e.t.Fatalf("Memory(%q): %v", name, err)
	}
	return b
}

func (s *suite) agentTests() []namedTest {
	return []namedTest{
		{"GetOrCreate", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "run", UserID: "u", Retention: store.Persistent})
			a := e.agents("run")
			p := e.agentMemory(a, "planner")
			if again := e.agentMemory(a, "planner"); again != p {
				t.Fatal("a second Memory(planner) opened another memory")
			}
			if err := p.AddUser(e.ctx, "plan the trip"); err != nil {
				t.Fatal(err)
			}
			sess := e.get("run.planner")
			if sess.Agent != "planner" || sess.UserID != "u" || sess.Retention != store.Persistent || sess.Metadata[store.MetaRun] != "run" {
				t.Fatalf("agent memory session %s", sessionLine(sess))
			}
			// Another process opening the run gets the same memory, and
			// creates the next agent's, which the first lists.
			other := e.agents("run")
			p2 := e.agentMemory(other, "planner")
			if got, want := e.stepsJSON(p2.Steps()), e.stepsJSON(p.Steps()); got != want || len(p2.Steps()) != 1 {
				t.Fatalf("the other process's planner memory\n%s\nwant\n%s", got, want)
			}
			e.agentMemory(other, "coder")
			names, err := a.List(e.ctx)
			if err != nil || !slices.Equal(names, []string{"coder", "planner"}) {
				t.Fatalf("List = %v, %v; want [coder planner]", names, err)
			}
			// The run's own log is untouched.
			if n := e.get("run").LastSeq; n != 0 {
				t.Fatalf("the run session has %d entries", n)
			}
		}},
		{"RunsAreSeparate", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "r1", UserID: "u"})
			e.create(store.CreateRequest{ID: "r2", UserID: "u"})
			e.agentMemory(e.agents("r1"), "a")
			e.agentMemory(e.agents("r2"), "b")
			if names, err := e.agents("r1").List(e.ctx); err != nil || !slices.Equal(names, []string{"a"}) {
				t.Fatalf("List(r1) = %v, %v; want [a]", names, err)
			}
			// A session that merely has an agent's ID is not its memory.
			e.create(store.CreateRequest{ID: "r1.intruder", UserID: "u", Agent: "intruder"})
			_, err := e.agents("r1").Memory(e.ctx, "intruder")
			e.wantErr(err, agentmem.ErrConflict, "Memory(intruder) over an unrelated session")
			if names, _ := e.agents("r1").List(e.ctx); !slices.Equal(names, []string{"a"}) {
				t.Fatalf("List(r1) = %v; the unrelated session is listed", names)
			}
		}},
		{"Tenants", func(t *testing.T) {
			e := s.open(t)
			// Two tenants, each with a run "run": their agents never meet.
			e.create(store.CreateRequest{ID: "run", Tenant: "t1"})
			e.create(store.CreateRequest{ID: "run", Tenant: "t2"})
			a1, a2 := e.tenantAgents("t1", "run"), e.tenantAgents("t2", "run")
			p1 := e.agentMemory(a1, "planner")
			if err := p1.AddUser(e.ctx, "t1's plan"); err != nil {
				t.Fatal(err)
			}
			p2 := e.agentMemory(a2, "planner")
			if n := len(p2.Steps()); n != 0 {
				t.Fatalf("t2's planner sees %d steps of t1's", n)
			}
			e.agentMemory(a2, "coder")
			if names, _ := a1.List(e.ctx); !slices.Equal(names, []string{"planner"}) {
				t.Fatalf("t1 lists %v", names)
			}
			if g := e.get("t1/run.planner"); g.Tenant != "t1" {
				t.Fatalf("t1's planner memory: %s", sessionLine(g))
			}
			_, err := store.OpenAgents(e.ctx, e.st, "t3", "run", e.memOptions())
			e.wantErr(err, agentmem.ErrNotFound, "a run of another tenant")
		}},
		{"BadInput", func(t *testing.T) {
			e := s.open(t)
			_, err := store.OpenAgents(e.ctx, e.st, "", "missing", e.memOptions())
			e.wantErr(err, agentmem.ErrNotFound, "OpenAgents(missing run)")
			e.create(store.CreateRequest{ID: "run"})
			a := e.agents("run")
			for _, name := range []string{"", "a\nb", "\xff", strings.Repeat("a", store.MaxIDLen-len("run.")+1)} {
				_, err := a.Memory(e.ctx, name)
				e.wantErr(err, agentmem.ErrInvalid, fmt.Sprintf("Memory(%q)", name))
			}
			if names, _ := a.List(e.ctx); len(names) != 0 {
				t.Fatalf("refused names created %v", names)
			}
		}},
		{"AnyNames", func(t *testing.T) {
			// Agent names are any text, as the seeds' agent names are
			// ("Research Agent"): the memory's session ID is the run's and
			// the name joined by a dot, at most store.MaxIDLen bytes.
			e := s.open(t)
			e.create(store.CreateRequest{ID: "run 1"})
			a := e.agents("run 1")
			names := []string{"Research Agent", "a/b", "../x", "ünï", ".", strings.Repeat("n", store.MaxIDLen-len("run 1."))}
			for _, name := range names {
				m := e.agentMemory(a, name)
				if _, err := m.Add(e.ctx, taskStep("", "hello "+name)); err != nil {
					t.Fatalf("Memory(%q).Add: %v", name, err)
				}
				id, err := store.AgentSessionID("run 1", name)
				if err != nil || id != "run 1."+name {
					t.Fatalf("AgentSessionID(%q) = %q, %v", name, id, err)
				}
				if g, err := e.st.Get(e.ctx, "", id); err != nil || g.Agent != name || g.LastSeq != 1 {
					t.Fatalf("the memory of %q: %+v, %v", name, g, err)
				}
			}
			listed, err := a.List(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := slices.Sorted(slices.Values(names)); !slices.Equal(listed, want) {
				t.Fatalf("List = %q, want %q", listed, want)
			}
		}},
		{"SingleRunClose", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "run", Retention: store.SingleRun})
			a := e.agents("run")
			e.agentMemory(a, "x")
			if err := a.Close(e.ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := e.st.Get(e.ctx, "", "run.x"); err == nil {
				t.Fatal("a single-run agent memory outlived Close")
			}
		}},
	}
}
