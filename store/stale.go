package store

import (
	"fmt"

	"github.com/agentmem/agentmem"
)

// StaleError is the refusal of a write whose expected last sequence
// number is not the session's: another write came first. It wraps
// agentmem.ErrConflict.
type StaleError struct {
	SessionID string
	// Expected is the request's expected last sequence number, LastSeq
	// the session's.
	Expected, LastSeq int64
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("session %q: expected last seq %d, it is %d", e.SessionID, e.Expected, e.LastSeq)
}

// Unwrap makes errors.Is(err, agentmem.ErrConflict) true.
func (e *StaleError) Unwrap() error { return agentmem.ErrConflict }
