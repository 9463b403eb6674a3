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

// ErrIDReused reports an append that reuses the idempotency key or the step
// IDs of an earlier append for a request that is not a retry of it. The key
// may be recorded with another fingerprint, or a stored step with the ID may
// differ. The request's steps may be partly stored, or a retry's compaction
// may differ from the one stored with its steps. Nothing is stored. It wraps
// agentmem.ErrConflict; the errors Append returns for it are *IDReusedError.
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
	// request (see storekit.CheckKey).
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
// them: equal in everything (kind, ID, content, metadata) but Number and
// Time. The log assigns Number. A server fills Time with the time of the
// request when the client sends none, so a retry of the same body carries
// another one. The comparison is of the steps' JSON encodings
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
