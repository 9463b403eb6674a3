package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agentmem/agentmem"
)

// MetaRun is the session metadata key that names the run an agent's
// memory belongs to (see Agents).
const MetaRun = "agentmem.run"

// Agents is the seeds' MemoryManager.get_memory(agent_name) for a
// multi-agent run. Every agent of a run gets a memory of its own, created
// the first time it is asked for. It is the same one after that, in this
// process or any other that opens the run on the same store.
//
// The run is a session, and an agent's memory is a session of its own, with
// ID "<run>.<agent>". It has the run's tenant, user and retention,
// Session.Agent set to the agent and metadata MetaRun naming the run. So it
// is listed, exported, inspected and deleted like any session. A single-run
// run's agent memories are single-run too: Close deletes them.
//
// Agents is safe for concurrent use; two processes that get the same
// agent's memory at once get the same session.
type Agents struct {
	st   *Store
	run  *Session
	opts agentmem.Options

	mu   sync.Mutex
	open map[string]*Bound
}

// OpenAgents opens the agent memories of a run, an existing session of a
// tenant of st. opts are the options of every agent memory (opts.Journal
// must be nil).
func OpenAgents(ctx context.Context, st *Store, tenant, runID string, opts agentmem.Options) (*Agents, error) {
	if opts.Journal != nil {
		return nil, invalid("options.journal", "must be nil: a bound memory journals to its session")
	}
	run, err := st.Get(ctx, tenant, runID)
	if err != nil {
		return nil, err
	}
	return &Agents{st: st, run: run, opts: opts, open: map[string]*Bound{}}, nil
}

// AgentSessionID is the session ID of an agent's memory in a run: the
// run's ID and the agent's name joined by a dot ("run.Research Agent").
// The name is any text without control characters (see ValidateID); it is
// ErrInvalid when the session ID would not be one (over MaxIDLen bytes in
// all).
func AgentSessionID(runID, agent string) (string, error) {
	if err := validName("agent", agent, MaxIDLen); err != nil {
		return "", err
	}
	id := runID + "." + agent
	if len(id) > MaxIDLen {
		return "", invalid("agent", "%.140q is too long: the session ID of its memory, the run's ID and the name joined by a dot, would be %d bytes (at most %d)", agent, len(id), MaxIDLen)
	}
	if err := ValidateID(id); err != nil {
		return "", fmt.Errorf("agent %.140q: %w", agent, err)
	}
	return id, nil
}

// Memory returns the agent's memory, creating it when the agent has none
// yet (get-or-create, as the seed's get_memory). The memory is opened once
// per Agents and returned again to later calls. A session with the
// agent's ID that is not this run's agent memory is refused with
// ErrConflict.
func (a *Agents) Memory(ctx context.Context, agent string) (*Bound, error) {
	id, err := AgentSessionID(a.run.ID, agent)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if b, ok := a.open[agent]; ok {
		return b, nil
	}
	s, err := a.st.Get(ctx, a.run.Tenant, id)
	if errors.Is(err, agentmem.ErrNotFound) {
		s, err = a.st.Create(ctx, CreateRequest{ID: id, Tenant: a.run.Tenant, UserID: a.run.UserID, Agent: agent,
			Retention: a.run.Retention, Metadata: map[string]string{MetaRun: a.run.ID}})
		if errors.Is(err, agentmem.ErrConflict) { // another process created it first
			s, err = a.st.Get(ctx, a.run.Tenant, id)
		}
	}
	if err != nil {
		return nil, err
	}
	if s.Tenant != a.run.Tenant || s.Agent != agent || s.Metadata[MetaRun] != a.run.ID {
		return nil, fmt.Errorf("session %q is not the memory of agent %q of run %q: %w", id, agent, a.run.ID, agentmem.ErrConflict)
	}
	b, err := OpenTenantMemory(ctx, a.st, a.run.Tenant, id, a.opts)
	if err != nil {
		return nil, err
	}
	a.open[agent] = b
	return b, nil
}

// List returns the names of the run's agents that have a memory, sorted,
// whichever process created them. It reads the sessions of the run's
// tenant and user, so it costs what listing those does.
func (a *Agents) List(ctx context.Context) ([]string, error) {
	var names []string
	req := ListRequest{Tenant: a.run.Tenant, ExactTenant: true, UserID: a.run.UserID, PageSize: 1000}
	for {
		resp, err := a.st.List(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, s := range resp.Sessions {
			if s.Metadata[MetaRun] == a.run.ID && s.Agent != "" && s.ID == a.run.ID+"."+s.Agent {
				names = append(names, s.Agent)
			}
		}
		if resp.NextPageToken == "" {
			break
		}
		req.PageToken = resp.NextPageToken
	}
	slices.Sort(names)
	return names, nil
}

// Close closes every agent memory this Agents opened (see Bound.Close:
// single-run memories are deleted). The store is not closed.
func (a *Agents) Close(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var errs []error
	for name, b := range a.open {
		errs = append(errs, b.Close(ctx))
		delete(a.open, name)
	}
	return errors.Join(errs...)
}
