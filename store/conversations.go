package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentmem/agentmem"
)

// Conversations is the seeds' ConversationStore over any Store: whole
// conversations saved and loaded by ID within one tenant. A conversation
// is a session of that tenant; its content is the session's working set.
//
// Save replaces a conversation, but the log keeps what was there: the
// steps the saved snapshot still holds stay where they are, new ones are
// appended, and one full compaction entry records the conversation as
// saved (what left it is in its Removed list). Load of a conversation that
// does not exist returns an empty snapshot, as the seed's load returns an
// empty list: that is the default. Get is the strict form, which returns a
// *ConversationNotFoundError instead.
//
// It is a value over the Store and holds no state of its own, so it is as
// safe for concurrent use as the Store is.
type Conversations struct {
	// Store holds the conversations' sessions.
	Store *Store
	// Tenant owns the conversations: sessions of other tenants are
	// invisible (another tenant's conversation is "not found").
	Tenant string
	// Retry bounds the retries of a Save that another writer got ahead
	// of; nil means DefaultRetry.
	Retry *RetryPolicy
}

// ConversationNotFoundError is Get's error for a conversation that does
// not exist (or belongs to another tenant). It wraps agentmem.ErrNotFound.
type ConversationNotFoundError struct {
	ID string
}

func (e *ConversationNotFoundError) Error() string {
	return fmt.Sprintf("conversation %q not found", e.ID)
}

// Unwrap makes errors.Is(err, agentmem.ErrNotFound) true.
func (e *ConversationNotFoundError) Unwrap() error { return agentmem.ErrNotFound }

// Load returns a conversation's working set as a snapshot (which
// agentmem.Memory.Restore takes), or an empty snapshot when the
// conversation does not exist, as the seed's load does. Use Get to tell a
// missing conversation from an empty one.
func (c Conversations) Load(ctx context.Context, id string) (*agentmem.Snapshot, error) {
	snap, err := c.Get(ctx, id)
	var nf *ConversationNotFoundError
	if errors.As(err, &nf) {
		return &agentmem.Snapshot{Version: agentmem.SnapshotVersion}, nil
	}
	return snap, err
}

// Get returns a conversation's working set as a snapshot, or a
// *ConversationNotFoundError (wrapping agentmem.ErrNotFound) when it does
// not exist in the tenant.
func (c Conversations) Get(ctx context.Context, id string) (*agentmem.Snapshot, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	ws, err := readWorkingSet(ctx, c.Store, c.Tenant, id)
	if errors.Is(err, agentmem.ErrNotFound) {
		return nil, &ConversationNotFoundError{ID: id}
	}
	if err != nil {
		return nil, err
	}
	return &agentmem.Snapshot{Version: agentmem.SnapshotVersion, NextNumber: int(ws.Session.LastSeq) + 1, Steps: ws.Steps}, nil
}

// SaveMessages saves a conversation given as chat messages: they are
// folded into steps as agentmem.StepsFromMessages does, then saved.
func (c Conversations) SaveMessages(ctx context.Context, id string, msgs []agentmem.Message) error {
	steps, err := agentmem.StepsFromMessages(msgs)
	if err != nil {
		return err
	}
	return c.Save(ctx, id, &agentmem.Snapshot{Version: agentmem.SnapshotVersion, NextNumber: len(steps), Steps: steps})
}

// Save makes snap the conversation's content, creating the conversation
// (a session of the tenant) when it does not exist. A step of snap that the
// conversation already holds, the same step under the same ID, is kept
// where it is in the log. A changed one (same ID and kind) is recorded as a
// modified copy. The others are appended; a step without an ID, or with the
// ID of a step the log keeps from earlier content, gets a new one.
// One full compaction entry then records the saved order; the steps it
// leaves out stay in the log. A save that only adds steps after the old
// ones is a plain append, and saving what the conversation already holds
// writes nothing. A pending action (snap.Pending) is saved as the
// last step, still pending.
//
// When another writer changes the conversation meanwhile, Save reads it again
// and retries, within c.Retry (then a *ContendedError): the last save wins,
// as the seed's overwrite does. Errors: agentmem.ErrInvalid for a bad ID or
// snapshot (nothing is written), and what the Store returns.
func (c Conversations) Save(ctx context.Context, id string, snap *agentmem.Snapshot) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	if snap == nil {
		return invalid("snapshot", "is nil")
	}
	steps := slices.Clone([]agentmem.Step(snap.Steps))
	if snap.Pending != nil {
		steps = append(steps, snap.Pending)
	}
	for i, s := range steps {
		if s == nil {
			return invalid(fmt.Sprintf("snapshot.steps[%d]", i), "is nil")
		}
		if err := s.Validate(); err != nil {
			return fmt.Errorf("snapshot.steps[%d]: %w", i, err)
		}
	}
	return c.Retry.Do(ctx, "save", func(int) error { return c.save(ctx, id, steps) })
}

// save is one attempt of Save.
func (c Conversations) save(ctx context.Context, id string, steps []agentmem.Step) error {
	ws, err := readWorkingSet(ctx, c.Store, c.Tenant, id)
	if errors.Is(err, agentmem.ErrNotFound) {
		if _, err := c.Store.Create(ctx, CreateRequest{ID: id, Tenant: c.Tenant}); err != nil {
			return err // ErrConflict: created meanwhile; Save retries
		}
		ws, err = readWorkingSet(ctx, c.Store, c.Tenant, id)
	}
	if err != nil {
		return err
	}
	type held struct {
		seq  int64
		step agentmem.Step
	}
	byID := make(map[string]held, len(ws.Steps))
	order := make([]int64, len(ws.Steps))
	for i, s := range ws.Steps {
		byID[s.Info().ID] = held{int64(s.Info().Number), s}
		order[i] = int64(s.Info().Number)
	}
	copies := make(map[int64]bool, len(ws.Replaced))
	for _, n := range ws.Replaced {
		copies[n] = true
	}
	rec := &CompactionRecord{}
	var fresh []agentmem.Step
	kept := make(map[int64]bool, len(steps))
	for _, s := range steps {
		h, ok := byID[s.Info().ID]
		switch {
		case ok && !kept[h.seq] && SameStep(h.step, s):
			rec.Working = append(rec.Working, h.seq)
			if copies[h.seq] { // a full record carries the copies in force again
				rec.Replaced = append(rec.Replaced, h.step)
			}
			kept[h.seq] = true
		case ok && !kept[h.seq] && h.step.Kind() == s.Kind():
			info := s.Info()
			info.Number = int(h.seq)
			rec.Working = append(rec.Working, h.seq)
			rec.Replaced = append(rec.Replaced, agentmem.WithInfo(s, info))
			kept[h.seq] = true
		default:
			info := s.Info()
			if info.ID == "" || ok { // no ID, or one the conversation uses for another step
				info.ID = agentmem.NewID()
			}
			rec.Working = append(rec.Working, NewStepRef(len(fresh)))
			fresh = append(fresh, agentmem.WithInfo(s, info))
		}
	}
	for _, s := range ws.Steps {
		if n := int64(s.Info().Number); !kept[n] {
			rec.Removed = append(rec.Removed, n)
		}
	}
	unchanged := len(rec.Removed) == 0 && sameCopies(rec.Replaced, ws)
	appended := order
	for i := range fresh {
		appended = append(appended, NewStepRef(i))
	}
	if unchanged && len(fresh) == 0 && slices.Equal(rec.Working, order) {
		return nil // the conversation is what it was
	}
	req := AppendRequest{Tenant: c.Tenant, SessionID: id, Steps: fresh, Compaction: rec, ExpectedLastSeq: &ws.Session.LastSeq}
	if unchanged && slices.Equal(rec.Working, appended) {
		req.Compaction = nil // new steps after the old ones: a plain append says it
	}
	resp, err := c.Store.Append(ctx, req)
	if errors.Is(err, ErrIDReused) || (err == nil && resp.LastSeq == ws.Session.LastSeq) {
		// A new step has the ID of one the log keeps from before (it left
		// the conversation and came back): the store took the append for
		// a retry of that one. The steps are new here: new IDs say so.
		for i, s := range fresh {
			info := s.Info()
			info.ID = agentmem.NewID()
			fresh[i] = agentmem.WithInfo(s, info)
		}
		_, err = c.Store.Append(ctx, req)
	}
	return err
}

// sameCopies reports whether the copies of a record are exactly those the
// working set already shows.
func sameCopies(replaced []agentmem.Step, ws *ReadResponse) bool {
	if len(replaced) != len(ws.Replaced) {
		return false
	}
	shown := make(map[int64]agentmem.Step, len(ws.Steps))
	for _, s := range ws.Steps {
		shown[int64(s.Info().Number)] = s
	}
	for _, r := range replaced {
		if s, ok := shown[int64(r.Info().Number)]; !ok || !SameStep(s, r) {
			return false
		}
	}
	return true
}

// List returns the IDs of the tenant's conversations, sorted, as the
// seed's list_conversations does. Every session of the tenant is one.
func (c Conversations) List(ctx context.Context) ([]string, error) {
	var ids []string
	req := ListRequest{Tenant: c.Tenant, ExactTenant: true, PageSize: 1000}
	for {
		resp, err := c.Store.List(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, s := range resp.Sessions {
			ids = append(ids, s.ID)
		}
		if resp.NextPageToken == "" {
			break
		}
		req.PageToken = resp.NextPageToken
	}
	slices.Sort(ids)
	return ids, nil
}

// Delete deletes a conversation, its log included. Deleting one that does
// not exist does nothing, as in the seed.
func (c Conversations) Delete(ctx context.Context, id string) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	if err := c.Store.Delete(ctx, c.Tenant, id); err != nil && !errors.Is(err, agentmem.ErrNotFound) {
		return err
	}
	return nil
}

// Clear deletes every conversation of the tenant, and nothing of other
// tenants. It returns how many it deleted; on an error it stops, and what
// it deleted before stays deleted.
func (c Conversations) Clear(ctx context.Context) (int, error) {
	ids, err := c.List(ctx)
	if err != nil {
		return 0, err
	}
	for i, id := range ids {
		if err := c.Store.Delete(ctx, c.Tenant, id); err != nil && !errors.Is(err, agentmem.ErrNotFound) {
			return i, fmt.Errorf("clear: conversation %q: %w", id, err)
		}
	}
	return len(ids), nil
}

// readWorkingSet reads a session's working set.
func readWorkingSet(ctx context.Context, st *Store, tenant, id string) (*ReadResponse, error) {
	return st.Read(ctx, ReadRequest{Tenant: tenant, SessionID: id, WorkingSet: true})
}
