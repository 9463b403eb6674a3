package storekit

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/internal/stepnum"
)

// LogView is what the rules of an append read of a session's visible log
// (inherited history included). A backend provides one under the
// session's lock, or inside the write transaction that serializes the
// session's appends, so that nothing changes the log between what
// PlanAppend reads and what the backend writes. Each method reads only
// what it is asked about, so that an append of new steps costs the same
// however long the session is.
type LogView interface {
	// Key returns the record of an idempotency key in the visible log,
	// nil if there is none.
	Key(ctx context.Context, key string) (*KeyRecord, error)
	// StepsByID returns the steps of the visible log whose IDs are among
	// ids, by ID (none for an append of new steps).
	StepsByID(ctx context.Context, ids []string) (map[string]StoredStep, error)
	// CompactionAt returns the record of the entry at seq if it is a
	// compaction, nil otherwise.
	CompactionAt(ctx context.Context, seq int64) (*store.CompactionRecord, error)
	// CompactionLookup returns the lookup with which CheckCompaction
	// checks c against the log as it is: the steps up to lastSeq that c
	// names in Working or, for an amendment, by its copies' numbers. Of
	// an amendment, only steps of the working set are found (see
	// InWorkingSet). A found step without a replacement in c may be any
	// step of the right existence: CheckCompaction reads only the steps
	// that have one.
	CompactionLookup(ctx context.Context, c *store.CompactionRecord, lastSeq int64) (func(seq int64) (agentmem.Step, bool), error)
	// WorkingSteps returns the steps of the working set, in order (see
	// store.WorkingSet), for CheckPinned.
	WorkingSteps(ctx context.Context) ([]WorkingStep, error)
}

// NewEntry is an entry an append adds to a session's log, numbered and
// encoded as every backend stores it.
type NewEntry struct {
	Seq  int64
	Kind store.EntryKind
	// StepID is the step's ID; "" for a compaction.
	StepID string
	// Body is the entry's encoding: store.EncodeStep of the numbered step, or
	// store.EncodeCompaction of the resolved record.
	Body []byte
}

// PlanAppend applies the rules of an append to a session whose visible
// log is v and whose newest entry is at lastSeq, up to what it writes. In
// order: the record of the request's idempotency key decides when there is
// one (CheckKey). A request whose steps are all stored is a retry, and one
// that reuses stored IDs otherwise is refused (CheckRetry,
// CheckRetriedCompaction). ExpectedLastSeq must be lastSeq. The compaction
// must name steps of the log (CheckCompaction) and keep the pinned ones
// (CheckPinned). It returns the response and the entries to
// add, numbered from lastSeq+1; none for a retry or a request that only
// checks its key. When there are entries and the request has a key, the
// backend records it too (NewKeyRecord), with them, all or none.
//
// req must have passed store.ValidateAppendEncoded, which returned encoded
// (nil is accepted: the steps are encoded here then). id names the
// session in errors. PlanAppend is the one place these rules live: every
// backend calls it, so they are the same on every backend.
func PlanAppend(ctx context.Context, v LogView, id string, lastSeq int64, req store.AppendRequest, encoded [][]byte) (*store.AppendResponse, []NewEntry, error) {
	if k := req.Idempotency; k != nil {
		rec, err := v.Key(ctx, k.Key)
		if err != nil {
			return nil, nil, err
		}
		resp, err := CheckKey(req, rec, lastSeq)
		if err != nil || resp != nil {
			return resp, nil, err
		}
		if store.KeyOnly(req) {
			return &store.AppendResponse{LastSeq: lastSeq}, nil, nil
		}
	}

	ids := make([]string, len(req.Steps))
	for i, st := range req.Steps {
		ids[i] = st.Info().ID
	}
	if len(ids) > 0 {
		existing, err := v.StepsByID(ctx, ids)
		if err != nil {
			return nil, nil, err
		}
		if len(existing) > 0 {
			if resp, err := retried(ctx, v, req, ids, existing, lastSeq); resp != nil || err != nil {
				return resp, nil, err
			}
		}
	}
	if req.ExpectedLastSeq != nil && *req.ExpectedLastSeq != lastSeq {
		return nil, nil, &store.StaleError{SessionID: id, Expected: *req.ExpectedLastSeq, LastSeq: lastSeq}
	}
	if c := req.Compaction; c != nil {
		lookup, err := v.CompactionLookup(ctx, c, lastSeq)
		if err != nil {
			return nil, nil, err
		}
		if err := CheckCompaction(c, lookup); err != nil {
			return nil, nil, err
		}
	}

	next := lastSeq
	seqs := make([]int64, len(req.Steps))
	out := make([]NewEntry, 0, len(req.Steps)+1)
	for i, st := range req.Steps {
		next++
		seqs[i] = next
		var pre []byte
		if i < len(encoded) {
			pre = encoded[i]
		}
		body, err := encodeNumbered(st, pre, next)
		if err != nil {
			return nil, nil, fmt.Errorf("steps[%d]: %w", i, err)
		}
		out = append(out, NewEntry{Seq: next, Kind: store.StepEntry, StepID: ids[i], Body: body})
	}
	resp := &store.AppendResponse{Seqs: seqs}
	if c := req.Compaction; c != nil {
		resolved, err := ResolveCompaction(c, seqs)
		if err != nil {
			return nil, nil, err
		}
		if !c.Amend { // an amendment keeps the working set's steps
			ws, err := v.WorkingSteps(ctx)
			if err != nil {
				return nil, nil, err
			}
			for i, st := range req.Steps {
				ws = append(ws, WorkingStep{Seq: seqs[i], Kind: st.Kind()})
			}
			if err := CheckPinned(resolved, ws); err != nil {
				return nil, nil, err
			}
		}
		body, err := store.EncodeCompaction(resolved)
		if err != nil {
			return nil, nil, err
		}
		next++
		resp.CompactionSeq = next
		out = append(out, NewEntry{Seq: next, Kind: store.CompactionEntry, Body: body})
	}
	resp.LastSeq = next
	return resp, out, nil
}

// retried handles a request some of whose steps are stored (existing, by
// ID): see CheckRetry. For a retry it returns the response (the stored
// seqs, and the seq of the compaction stored after them if the request
// has one); for a request that reuses IDs otherwise, the error. A retry
// stores nothing and succeeds whatever its ExpectedLastSeq says.
func retried(ctx context.Context, v LogView, req store.AppendRequest, ids []string, existing map[string]StoredStep, lastSeq int64) (*store.AppendResponse, error) {
	seqs, retry, err := CheckStoredRetry(req.Steps, ids, existing)
	if err != nil || !retry {
		return nil, err
	}
	resp := &store.AppendResponse{Seqs: seqs, LastSeq: lastSeq, Retried: true}
	if req.Compaction != nil {
		after := slices.Max(seqs) + 1
		rec, err := v.CompactionAt(ctx, after)
		if err != nil {
			return nil, err
		}
		if err := CheckRetriedCompaction(req.Compaction, seqs, after, rec); err != nil {
			return nil, err
		}
		resp.CompactionSeq = after
	}
	return resp, nil
}

// A step is encoded once, by store.ValidateAppendEncoded in the goroutine
// that appends, before it waits for the session's lock. Under the lock only
// its sequence number is spliced into that encoding. Encoding is otherwise
// a large share of the time appends spend one after another.

// encodeNumbered returns store.EncodeStep(store.WithNumber(st, seq)), from
// pre (st's encoding by store.ValidateAppendEncoded) when it can.
func encodeNumbered(st agentmem.Step, pre []byte, seq int64) ([]byte, error) {
	if b, ok := renumber(pre, st.Kind(), seq); ok {
		return b, nil
	}
	if int64(st.Info().Number) != seq {
		st = store.WithNumber(st, seq)
	}
	return store.EncodeStep(st)
}

// renumber replaces the number of an encoded step with seq. store.EncodeStep
// writes a step as {"type":"<kind>","number":<n>,...}; if b does not
// start that way, renumber reports false and the caller encodes the step
// again. TestRenumber checks that the result is byte for byte the
// encoding of the numbered step, for every kind of step.
func renumber(b []byte, kind agentmem.StepKind, seq int64) ([]byte, bool) {
	i, j, ok := stepnum.Find(b, kind)
	if !ok {
		return nil, false
	}
	out := make([]byte, 0, len(b)+20)
	out = append(out, b[:i]...)
	out = strconv.AppendInt(out, seq, 10)
	return append(out, b[j:]...), true
}
