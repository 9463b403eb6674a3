package scratchpad

import (
	"errors"
	"fmt"

	"github.com/agentmem/agentmem/internal/textcut"
)

// Sentinel errors. Every error returned by the package wraps one of these,
// with a message that says what was wrong. The messages are written so
// that they can be handed back to a model as a tool result.
var (
	// ErrInvalidKey reports a variable key that is empty, longer than
	// MaxKeyBytes, not valid UTF-8 or containing control characters.
	ErrInvalidKey = errors.New("scratchpad: invalid key")
	// ErrInvalidValue reports a value that cannot be encoded as JSON
	// (a channel, a function, a NaN, a json.RawMessage that is not JSON).
	ErrInvalidValue = errors.New("scratchpad: invalid value")
	// ErrValueTooLarge reports a value whose JSON encoding is longer than
	// Options.MaxValueBytes.
	ErrValueTooLarge = errors.New("scratchpad: value too large")
	// ErrFull reports an attempt to store a new variable in a Pad that
	// already holds Options.MaxVariables of them.
	ErrFull = errors.New("scratchpad: full")
	// ErrUnknownTool reports a tool call whose name is not one of the
	// Pad's tools.
	ErrUnknownTool = errors.New("scratchpad: unknown tool")
	// ErrInvalidArguments reports tool-call arguments that are not a JSON
	// object, lack a required field, have a field of the wrong type or an
	// unexpected field. The error is an *ArgumentError.
	ErrInvalidArguments = errors.New("scratchpad: invalid arguments")
	// ErrInvalidSnapshot reports JSON given to UnmarshalJSON that is not a
	// scratchpad snapshot of a supported version.
	ErrInvalidSnapshot = errors.New("scratchpad: invalid snapshot")
)

// ArgumentError describes invalid arguments to a tool call. It wraps
// ErrInvalidArguments.
type ArgumentError struct {
	// Tool is the name of the tool that was called.
	Tool string
	// Field names the offending argument; it is empty when the arguments
	// as a whole are wrong (not JSON, not an object).
	Field string
	// Reason says what is wrong.
	Reason string
}

// Error returns a message naming the tool, the field and the problem.
func (e *ArgumentError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("scratchpad: invalid arguments for %s: %s", e.Tool, e.Reason)
	}
	return fmt.Sprintf("scratchpad: invalid arguments for %s: field %q %s", e.Tool, e.Field, e.Reason)
}

// Unwrap returns ErrInvalidArguments.
func (e *ArgumentError) Unwrap() error { return ErrInvalidArguments }

// clip shortens s for inclusion in an error message.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	return textcut.Prefix(s, n) + "…"
}
