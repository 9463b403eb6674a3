package agentmem

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by agentmem wraps one of these, so
// callers can test for the class of failure with errors.Is. The message
// says what was wrong and where.
var (
	// ErrInvalid reports input that is malformed or violates an invariant
	// (an unknown step type, a tool result without its call, invalid UTF-8).
	ErrInvalid = errors.New("agentmem: invalid input")
	// ErrNotFound reports a lookup of something that does not exist.
	ErrNotFound = errors.New("agentmem: not found")
	// ErrConflict reports a write that lost an optimistic-concurrency race.
	ErrConflict = errors.New("agentmem: conflict")
	// ErrBudgetTooSmall reports a token budget that cannot hold the pinned
	// content (system prompt and task). See BudgetError for the figures.
	ErrBudgetTooSmall = errors.New("agentmem: token budget too small")
	// ErrUnavailable reports a failure of what stands behind a call rather
	// than of the call. That is a database that cannot be reached, is busy,
	// is shutting down or did not answer in time, or a store used after
	// Close. The same call may succeed later (on a restarted server, once
	// the database is back). Backends wrap the transient errors of their
	// drivers in it. An error that wraps none of these sentinels is one
	// nobody expected (a corrupt record, a bug), and retrying it is no cure.
	ErrUnavailable = errors.New("agentmem: unavailable")
)

// InvalidError describes why an input was refused. It wraps ErrInvalid.
type InvalidError struct {
	// Field names the offending field, in JSON-path style where it helps
	// (for example "tool_calls[1].id"); it may be empty.
	Field string
	// Reason says what is wrong with it.
	Reason string
}

func (e *InvalidError) Error() string {
	if e.Field == "" {
		return "agentmem: invalid input: " + e.Reason
	}
	return fmt.Sprintf("agentmem: invalid %s: %s", e.Field, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// invalidf builds an *InvalidError.
func invalidf(field, format string, args ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// BudgetError reports that the pinned content alone needs more tokens than
// the budget allows. It wraps ErrBudgetTooSmall.
type BudgetError struct {
	Budget   int // the budget that was asked for
	Required int // tokens the pinned content (plus request overhead) needs
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("agentmem: token budget %d is too small: the pinned system prompt and task need %d", e.Budget, e.Required)
}

// Unwrap makes errors.Is(err, ErrBudgetTooSmall) true.
func (e *BudgetError) Unwrap() error { return ErrBudgetTooSmall }

// StrategyError reports a strategy result that a memory cannot use (see
// Strategy on order): nothing changes. It wraps ErrInvalid.
type StrategyError struct {
	// Index is the position in the strategy's result of the step at
	// fault.
	Index int
	// Step is the number of that step, or -1 for a new step.
	Step int
	// Reason says what is wrong.
	Reason string
}

func (e *StrategyError) Error() string {
	return fmt.Sprintf("agentmem: invalid strategy result[%d]: %s", e.Index, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *StrategyError) Unwrap() error { return ErrInvalid }
