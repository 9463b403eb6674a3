package sessions

import (
	"context"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// RecordRequest records what a client holds of a session in one
// conditional write (Record): it takes newer messages off the working
// set, replaces the text of its system prompt, and appends messages. It
// is what a caller that resends the whole conversation on every request
// (the proxy) does once it has compared that conversation with the
// working set.
type RecordRequest struct {
	SessionID string
	// Tenant and SessionID name the session (see store.Store).
	Tenant string
	// ExpectedLastSeq is the LastSeq of the working set the caller
	// compared with. Record changes nothing and fails with
	// agentmem.ErrConflict when the session is no longer there.
	ExpectedLastSeq int64
	// System, when set, is the new text of the working set's leading
	// system prompt steps: the first takes it and the others are emptied.
	System *string
	// Keep, when not negative, is how many of the working set's
	// conversation messages (those after its leading system prompts) the
	// caller holds as they are: newer ones are taken off, newest first,
	// as Pop takes them. Pop takes a step's messages all at once (but for
	// an action's tool results, one at a time), so this may take off more
	// than asked; Messages is told how many are left. A negative Keep
	// takes nothing off.
	Keep int
	// Messages returns the messages to append after that, given how many
	// conversation messages the working set has left. They are folded as
	// AppendMessages folds them.
	Messages func(left int) []agentmem.Message
	// NewID makes the new steps' IDs; nil means agentmem.NewID.
	NewID func() string
	// Now is the time given to new steps whose message has none; nil
	// means time.Now.
	Now func() time.Time
}

// RecordResponse reports what Record did.
type RecordResponse struct {
	// Rewound is the number of conversation messages taken off.
	Rewound int
	// Appended is the number of messages appended.
	Appended int
	// Seqs are the sequence numbers of the new steps, in order.
	Seqs []int64
	// CompactionSeq is the sequence number of the compaction entry that
	// records the rewind, the new system prompt or the tool results given
	// to stored actions (0: none).
	CompactionSeq int64
	// LastSeq is the session's LastSeq after the write (ExpectedLastSeq
	// when there was nothing to write).
	LastSeq int64
}

// record takes messages off a session's working set, replaces its system
// prompt and appends messages, as RecordRequest says, in one append
// conditional on req.ExpectedLastSeq: a crash or a concurrent writer
// leaves the session as it was before or as it is after, never halfway.
// The working set comes from ws (see appendMessages), and the append
// is told to it.
//
// When nothing is taken off, the append is the new steps and an
// amendment carrying the changed system prompt and the actions the
// messages complete, as AppendMessages and an amendment would store them.
// When messages are taken off, it is the new steps and one full
// compaction record: the working set kept, the new steps after it, the
// steps taken off in Removed, and every modified copy in force.
//
// Errors: those of AppendMessages, and agentmem.ErrConflict when the
// session's LastSeq is not ExpectedLastSeq.
func record(ctx context.Context, st *store.Store, ws workingSetSource, req RecordRequest) (*RecordResponse, error) {
	if err := store.ValidateKey(req.Tenant, req.SessionID); err != nil {
		return nil, err
	}
	if req.ExpectedLastSeq < 0 {
		return nil, invalid("expected_last_seq", "is negative")
	}
	key := store.Key{Tenant: req.Tenant, ID: req.SessionID}
	cur, err := ws.WorkingSet(ctx, key)
	if err != nil {
		return nil, err
	}
	if last := cur.Session.LastSeq; last != req.ExpectedLastSeq {
		return nil, &store.StaleError{SessionID: req.SessionID, Expected: req.ExpectedLastSeq, LastSeq: last}
	}
	steps := cur.Steps
	// changed holds the copies this write makes, by step number.
	changed := map[int64]agentmem.Step{}
	nsys := 0
	for nsys < len(steps) {
		if _, ok := steps[nsys].(*agentmem.SystemPromptStep); !ok {
			break
		}
		nsys++
	}
	left := 0
	for _, s := range steps[nsys:] {
		left += len(s.Messages(agentmem.RenderOptions{}))
	}
	out := &RecordResponse{}
	var removed []int64
	for req.Keep >= 0 && left > req.Keep && len(steps) > nsys {
		i := len(steps) - 1
		n := int64(steps[i].Info().Number)
		if _, rest := agentmem.PopMessage(steps[i]); rest != nil {
			steps[i], changed[n] = rest, rest
			left--
			out.Rewound++
			continue
		}
		k := max(1, len(steps[i].Messages(agentmem.RenderOptions{})))
		removed = append(removed, n)
		delete(changed, n)
		steps = steps[:i]
		left -= k
		out.Rewound += k
	}
	left = max(left, 0)
	if req.System != nil {
		for i, s := range steps[:nsys] {
			c := *s.(*agentmem.SystemPromptStep)
			c.Content = ""
			if i == 0 {
				c.Content = *req.System
			}
			steps[i], changed[int64(c.Number)] = &c, &c
		}
	}
	var msgs []agentmem.Message
	if req.Messages != nil {
		msgs = req.Messages(left)
	}
	newID, now := req.NewID, req.Now
	if newID == nil {
		newID = agentmem.NewID
	}
	if now == nil {
		now = time.Now
	}
	var f *agentmem.Folded
	if len(msgs) > 0 {
		open := agentmem.OpenActions(steps, msgs, false)
		if f, err = agentmem.FoldMessages(open, msgs, agentmem.FoldOptions{KeepPending: true, NewID: newID, Now: now}); err != nil {
			return nil, err
		}
		for _, u := range f.Updated {
			changed[int64(u.Number)] = u
		}
		out.Appended = len(msgs)
	} else {
		f = &agentmem.Folded{}
	}
	ar := store.AppendRequest{Tenant: req.Tenant, SessionID: req.SessionID, Steps: f.Steps, ExpectedLastSeq: &req.ExpectedLastSeq}
	switch {
	case len(removed) > 0:
		copies := make(map[int64]bool, len(cur.Replaced))
		for _, n := range cur.Replaced {
			copies[n] = true
		}
		rec := &store.CompactionRecord{Working: make([]int64, 0, len(steps)+len(f.Steps)), Removed: removed}
		for _, s := range steps {
			n := int64(s.Info().Number)
			rec.Working = append(rec.Working, n)
			if c, ok := changed[n]; ok {
				rec.Replaced = append(rec.Replaced, c)
			} else if copies[n] {
				rec.Replaced = append(rec.Replaced, s)
			}
		}
		for i := range f.Steps {
			rec.Working = append(rec.Working, store.NewStepRef(i))
		}
		ar.Compaction = rec
	case len(changed) > 0:
		rec := &store.CompactionRecord{Amend: true}
		for _, s := range steps {
			if c, ok := changed[int64(s.Info().Number)]; ok {
				rec.Replaced = append(rec.Replaced, c)
			}
		}
		ar.Compaction = rec
	case len(f.Steps) == 0:
		out.LastSeq = req.ExpectedLastSeq
		return out, nil
	}
	resp, err := st.Append(ctx, ar)
	if err != nil {
		return nil, err
	}
	if !resp.Retried {
		ws.Appended(ctx, ar, resp)
	}
	out.Seqs, out.CompactionSeq, out.LastSeq = resp.Seqs, resp.CompactionSeq, resp.LastSeq
	return out, nil
}

// Record records what a client holds of a session in one conditional
// write: messages taken off, the system prompt replaced and
// new messages appended, against the session's working set as the context
// cache holds it. A request without Now gets the service's clock. It is
// not retried: a caller that compares with the working set first compares
// again when it loses a race (see Retry).
func (s *Service) Record(ctx context.Context, req RecordRequest) (*RecordResponse, error) {
	if req.Now == nil {
		req.Now = s.clock
	}
	return record(ctx, s.st, workingSets{s}, req)
}
