package store

import (
	"bytes"
	"fmt"
	"time"

	"github.com/agentmem/agentmem"
)

// ExistsError is the error of a Create, a branch or an import whose
// session ID is in use in its tenant. It wraps agentmem.ErrConflict.
// Backends return it as it is, without their name or anything else
// around it, so that a transport can show its message to the client:
// the message names the session only.
type ExistsError struct {
	// Tenant and ID name the session.
	Tenant, ID string
}

func (e *ExistsError) Error() string { return fmt.Sprintf("session %q already exists", e.ID) }

// Unwrap makes errors.Is(err, agentmem.ErrConflict) true.
func (e *ExistsError) Unwrap() error { return agentmem.ErrConflict }

// ErrIDReused reports an append that reuses the idempotency key or the
// step IDs of an earlier append for a request that is not a retry of it:
// a key recorded with another fingerprint, a step whose ID is stored
// already but whose content differs, a request whose steps are partly
// stored, or a retry whose compaction differs from the one stored with
// its steps. Nothing is stored. It wraps
// agentmem.ErrConflict; the errors Append returns for it are
// *IDReusedError.
var ErrIDReused = fmt.Errorf("store: step IDs reused for a different request: %w", agentmem.ErrConflict)

// IDReusedError is the error of an append refused with ErrIDReused. It
// says what differs.
type IDReusedError struct {
	// Index is the index in AppendRequest.Steps of the step that differs,
	// or -1 when the steps match and the compaction differs, or when the
	// idempotency key's record does (Key is then set).
	Index int
	// Key is the request's idempotency key when what the request
	// contradicts is the key's record: the key was used for another
	// request (see CheckKey).
	Key string
	// ID is the ID of the step at Index (empty when Index is -1).
	ID string
	// Seq is the sequence number of the stored entry the request
	// contradicts (0 for a step of a partly stored request that is not
	// stored; the first entry of the key's request with Key).
	Seq int64
	// Reason says what differs, for people, as a predicate of the step
	// or the compaction ("differs from the step stored at seq 4").
	Reason string
}

func (e *IDReusedError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("store: idempotency key %q: %s; a request that reuses an idempotency key must be a retry of the same request, a new request needs a new key: %v",
			e.Key, e.What(), agentmem.ErrConflict)
	}
	return fmt.Sprintf("store: %s; a request that reuses step IDs must be a retry of the same request, a new request needs new IDs: %v",
		e.What(), agentmem.ErrConflict)
}

// What says what differs: the step (by ID and index) or the compaction,
// and Reason (with Key, Reason alone, which says where the key's request
// is), as transports put it in their messages.
func (e *IDReusedError) What() string {
	if e.Key != "" {
		return e.Reason
	}
	if e.Index < 0 {
		return "the compaction " + e.Reason
	}
	return fmt.Sprintf("step ID %q (steps[%d]) %s", e.ID, e.Index, e.Reason)
}

// Unwrap makes errors.Is(err, ErrIDReused) and errors.Is(err,
// agentmem.ErrConflict) true.
func (e *IDReusedError) Unwrap() error { return ErrIDReused }

// SameStep reports whether two steps are the same step as a retry sees
// them: equal in everything (kind, ID, content, metadata) but Number, which
// the log assigns, and Time, which a server fills with the time of the
// request when the client sends none, so that a retry of the same body
// carries another one. The comparison is of the steps' JSON encodings
// (EncodeStep).
func SameStep(a, b agentmem.Step) bool {
	if a == nil || b == nil || a.Kind() != b.Kind() {
		return a == nil && b == nil
	}
	ea, err := EncodeStep(withoutNumberAndTime(a))
	if err != nil {
		return false
	}
	eb, err := EncodeStep(withoutNumberAndTime(b))
	return err == nil && bytes.Equal(ea, eb)
}

func withoutNumberAndTime(s agentmem.Step) agentmem.Step {
	info := s.Info()
	if info.Number == 0 && info.Time.IsZero() {
		return s
	}
	info.Number, info.Time = 0, time.Time{}
	return agentmem.WithInfo(s, info)
}

// CheckRetry decides what an append is from the request's steps that
// the session's visible log holds already: stored[i] is the stored step
// with Steps[i]'s ID (nil if there is none) and seqs[i] its sequence
// number. Backends call it in the append's transaction, after looking
// the request's step IDs up; only stored steps are compared, so an
// append of new steps pays nothing for it.
//
//   - No step is stored (or the request has none): a new append; it
//     returns false.
//   - Every step is stored and each is the same step (SameStep): a retry;
//     it returns true. The backend answers with the stored seqs (and, with
//     a compaction, checks it with CheckRetriedCompaction) and stores
//     nothing.
//   - Otherwise the request reuses IDs for something else: a stored step
//     differs from the request's, or some steps are stored and others
//     not (appends are all or none, so a retry finds all its steps or
//     none). The error is an *IDReusedError (ErrIDReused).
func CheckRetry(steps, stored []agentmem.Step, seqs []int64) (bool, error) {
	n := 0
	for i, s := range stored {
		if s == nil {
			continue
		}
		n++
		if !SameStep(s, steps[i]) {
			return false, &IDReusedError{Index: i, ID: steps[i].Info().ID, Seq: seqs[i],
				Reason: fmt.Sprintf("differs from the step stored with this ID at seq %d", seqs[i])}
		}
	}
	switch {
	case n == 0:
		return false, nil
	case n == len(steps):
		return true, nil
	}
	for i, s := range stored {
		if s == nil {
			var at string
			for j, o := range stored {
				if o != nil {
					at = fmt.Sprintf("steps[%d] is (at seq %d)", j, seqs[j])
					break
				}
			}
			return false, &IDReusedError{Index: i, ID: steps[i].Info().ID,
				Reason: "is not stored while " + at + ": a retry finds every step of its request stored"}
		}
	}
	return false, nil // not reached: 0 < n < len(steps) leaves a nil
}

// CheckRetriedCompaction checks the compaction c of a retry (a request
// whose steps are all stored, with sequence numbers seqs). The request
// that stored the steps stored its compaction right after the newest of
// them, so that entry, at seq after, must be a compaction with the same
// record as c once c's NewStepRefs are resolved to seqs (equal
// EncodeCompaction encodings). stored is that entry's record, nil if the
// entry is not a compaction or there is none. The error is an
// *IDReusedError (ErrIDReused).
//
// A retry without a compaction passes whatever follows its steps: a
// compaction there may have been appended on its own, later.
func CheckRetriedCompaction(c *CompactionRecord, seqs []int64, after int64, stored *CompactionRecord) error {
	reused := func(reason string) error {
		return &IDReusedError{Index: -1, Seq: after, Reason: reason}
	}
	if stored == nil {
		return reused(fmt.Sprintf("is missing: the request's steps are stored (up to seq %d) without one after them", after-1))
	}
	want, err := ResolveCompaction(c, seqs)
	if err != nil {
		return err
	}
	a, err := EncodeCompaction(want)
	if err != nil {
		return err
	}
	b, err := EncodeCompaction(stored)
	if err != nil {
		return err
	}
	if !bytes.Equal(a, b) {
		return reused(fmt.Sprintf("differs from the one stored after the request's steps, at seq %d", after))
	}
	return nil
}

// StoredStep is a step of a session's visible log that a backend found by
// its ID: its sequence number and its stored encoding, or the step itself
// for a backend that keeps steps decoded.
type StoredStep struct {
	Seq  int64
	Body []byte
	// Step, when not nil, is the stored step, and Body is not read.
	Step agentmem.Step
}

// CheckStoredRetry decodes the stored steps among a request's step IDs
// (existing, by ID) and applies CheckRetry to them: it returns the stored
// steps' seqs (0 for a step not stored) and whether the request is a
// retry, or the *IDReusedError.
func CheckStoredRetry(steps []agentmem.Step, ids []string, existing map[string]StoredStep) ([]int64, bool, error) {
	seqs := make([]int64, len(ids))
	stored := make([]agentmem.Step, len(ids))
	for i, id := range ids {
		st, ok := existing[id]
		if !ok {
			continue
		}
		step := st.Step
		if step == nil {
			var err error
			if step, err = DecodeStep(st.Body); err != nil {
				return nil, false, fmt.Errorf("stored entry %d does not decode: %v", st.Seq, err)
			}
		}
		seqs[i], stored[i] = st.Seq, step
	}
	retry, err := CheckRetry(steps, stored, seqs)
	return seqs, retry, err
}
