package agentmem

import (
	"encoding/json"
	"fmt"
)

// Tool describes a function-calling tool in the shape chat APIs expect:
// a name, a description for the model and a JSON Schema of its
// arguments. The toolboxes of packages facts, blocks and scratchpad
// offer theirs as Tools.
type Tool struct {
	// Name is the name the model calls the tool by.
	Name string `json:"name"`
	// Description tells the model what the tool does and when to use it.
	Description string `json:"description"`
	// Parameters is a JSON Schema of type "object" for the arguments.
	Parameters json.RawMessage `json:"parameters"`
}

// ToolArgumentError describes invalid arguments to a tool call. It wraps
// ErrInvalid, and its message can be handed back to the model.
type ToolArgumentError struct {
	// Tool is the name of the tool that was called.
	Tool string
	// Field names the offending argument; it is empty when the arguments
	// as a whole are wrong (not JSON, not an object).
	Field string
	// Reason says what is wrong.
	Reason string
}

// Error names the tool, the field and the problem.
func (e *ToolArgumentError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("agentmem: invalid arguments for %s: %s", e.Tool, e.Reason)
	}
	return fmt.Sprintf("agentmem: invalid arguments for %s: field %q %s", e.Tool, e.Field, e.Reason)
}

// Unwrap returns ErrInvalid.
func (e *ToolArgumentError) Unwrap() error { return ErrInvalid }
