package scratchpad

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentmem/agentmem"
)

// Names of the tools returned by Pad.Tools.
const (
	ToolStore   = "scratchpad_store"
	ToolRecall  = "scratchpad_recall"
	ToolDelete  = "scratchpad_delete"
	ToolObserve = "scratchpad_observe"
	ToolFail    = "scratchpad_fail"
	ToolContext = "scratchpad_context"
)

// Tool describes a function-calling tool in the shape chat APIs expect.
type Tool = agentmem.Tool

// schema is the JSON Schema of a tool's arguments.
type schema struct {
	Type                 string              `json:"type"`
	Properties           map[string]property `json:"properties"`
	Required             []string            `json:"required,omitempty"`
	AdditionalProperties bool                `json:"additionalProperties"`
}

// property is the JSON Schema of one argument. An empty Type allows any
// JSON value.
type property struct {
	Type        string `json:"type,omitempty"`
	Description string `json:"description"`
	MinLength   int    `json:"minLength,omitempty"`
	MaxLength   int    `json:"maxLength,omitempty"`
}

// field kinds for argument checking.
const (
	kindString = iota // a JSON string
	kindAny           // any JSON value, null included
)

// toolSpec defines one tool: its description, its arguments and how to
// run it.
type toolSpec struct {
	name     string
	describe func(Options) string
	fields   []fieldSpec // all required
	run      func(p *Pad, args map[string]json.RawMessage) (string, error)
}

// fieldSpec defines one argument.
type fieldSpec struct {
	name string
	kind int
	prop func(Options) property
}

var (
	keyField = fieldSpec{"key", kindString, func(Options) property {
		return property{
			Type:        "string",
			Description: fmt.Sprintf("Name of the variable, such as \"user_id\": 1 to %d bytes, no control characters.", MaxKeyBytes),
			MinLength:   1,
			MaxLength:   MaxKeyBytes,
		}
	}}
	valueField = fieldSpec{"value", kindAny, func(o Options) property {
		return property{
			Description: fmt.Sprintf("The value to remember: any JSON value (string, number, boolean, null, array or object), at most %d bytes as JSON.", o.MaxValueBytes),
		}
	}}
)

// textField returns the "text" argument of the observe and fail tools.
func textField(what string) fieldSpec {
	return fieldSpec{"text", kindString, func(o Options) property {
		return property{
			Type:        "string",
			Description: fmt.Sprintf("The %s, as a short self-contained note; text longer than %d bytes is truncated.", what, o.MaxEntryBytes),
			MinLength:   1,
		}
	}}
}

// tools lists the tools in the order Tools returns them.
var tools = []toolSpec{
	{
		name: ToolStore,
		describe: func(o Options) string {
			return fmt.Sprintf("Save a value in your scratchpad under a key, replacing any value already stored under that key. "+
				"Use it for facts you will need later in the task (IDs, names, intermediate results) so that you do not have to look them up again. "+
				"Stored variables are shown by scratchpad_context and read back with scratchpad_recall. "+
				"At most %d variables can be stored; delete those you no longer need with scratchpad_delete.", o.MaxVariables)
		},
		fields: []fieldSpec{keyField, valueField},
		run: func(p *Pad, args map[string]json.RawMessage) (string, error) {
			key := stringArg(args, "key")
			if err := p.Store(key, args["value"]); err != nil {
				return "", err
			}
			return fmt.Sprintf("stored %q", key), nil
		},
	},
	{
		name: ToolRecall,
		describe: func(Options) string {
			return "Read the value stored under a key in your scratchpad. " +
				"Returns the value as JSON, or a message saying that no variable has that name. " +
				"Use scratchpad_context to see every stored variable at once."
		},
		fields: []fieldSpec{keyField},
		run: func(p *Pad, args map[string]json.RawMessage) (string, error) {
			key := stringArg(args, "key")
			v, ok := p.Recall(key)
			if !ok {
				return fmt.Sprintf("no variable named %q", key), nil
			}
			return string(v), nil
		},
	},
	{
		name: ToolDelete,
		describe: func(Options) string {
			return "Remove a variable from your scratchpad when you no longer need it, making room for new ones. " +
				"Says whether the variable existed."
		},
		fields: []fieldSpec{keyField},
		run: func(p *Pad, args map[string]json.RawMessage) (string, error) {
			key := stringArg(args, "key")
			if !p.Delete(key) {
				return fmt.Sprintf("no variable named %q", key), nil
			}
			return fmt.Sprintf("deleted %q", key), nil
		},
	},
	{
		name: ToolObserve,
		describe: func(o Options) string {
			return fmt.Sprintf("Record something you learned or noticed while working on the task, "+
				"for example \"Found user in database\". "+
				"The %d most recent observations are shown by scratchpad_context; only the last %d are kept.",
				o.ContextObservations, o.MaxObservations)
		},
		fields: []fieldSpec{textField("observation")},
		run: func(p *Pad, args map[string]json.RawMessage) (string, error) {
			return recordResult(p, ToolObserve, &p.observations, args, p.limits().MaxObservations, "observation")
		},
	},
	{
		name: ToolFail,
		describe: func(o Options) string {
			return fmt.Sprintf("Record an approach that failed and why, "+
				"for example \"GET /users/john returned 404: the API wants the numeric id\", so that you do not try it again. "+
				"The %d most recent failures are shown by scratchpad_context; only the last %d are kept.",
				o.ContextFailures, o.MaxFailures)
		},
		fields: []fieldSpec{textField("failed attempt and the reason it failed")},
		run: func(p *Pad, args map[string]json.RawMessage) (string, error) {
			return recordResult(p, ToolFail, &p.failures, args, p.limits().MaxFailures, "failure")
		},
	},
	{
		name: ToolContext,
		describe: func(o Options) string {
			return fmt.Sprintf("Show what is in your scratchpad: every stored variable with its value, "+
				"the %d most recent observations and the %d most recent failed attempts. Takes no arguments.",
				o.ContextObservations, o.ContextFailures)
		},
		run: func(p *Pad, _ map[string]json.RawMessage) (string, error) {
			if s := p.Context(); s != "" {
				return s, nil
			}
			return "the scratchpad is empty", nil
		},
	},
}

// recordResult runs the observe and fail tools.
func recordResult(p *Pad, tool string, r *ring, args map[string]json.RawMessage, max int, what string) (string, error) {
	entry, truncated := p.record(r, stringArg(args, "text"), max)
	switch {
	case entry == "":
		return "", &ArgumentError{Tool: tool, Field: "text", Reason: "must not be empty"}
	case truncated:
		return fmt.Sprintf("%s recorded (truncated to %d bytes)", what, len(entry)), nil
	}
	return what + " recorded", nil
}

// lookupTool returns the spec of the named tool.
func lookupTool(name string) (*toolSpec, bool) {
	i := slices.IndexFunc(tools, func(t toolSpec) bool { return t.name == name })
	if i < 0 {
		return nil, false
	}
	return &tools[i], true
}

// Tools returns the function-calling tools through which a model can use
// the Pad: scratchpad_store {key, value}, scratchpad_recall {key},
// scratchpad_delete {key}, scratchpad_observe {text}, scratchpad_fail
// {text} and scratchpad_context {}. The descriptions state the Pad's
// limits. Each schema is a strict object schema: every argument is
// required and no others are allowed. Run the calls with Call.
func (p *Pad) Tools() []Tool {
	lim := p.limits()
	out := make([]Tool, 0, len(tools))
	for _, t := range tools {
		s := schema{Type: "object", Properties: map[string]property{}}
		for _, f := range t.fields {
			s.Properties[f.name] = f.prop(lim)
			s.Required = append(s.Required, f.name)
		}
		params, err := json.Marshal(s)
		if err != nil {
			panic("scratchpad: encoding tool schema: " + err.Error()) // unreachable: plain data
		}
		out = append(out, Tool{Name: t.name, Description: t.describe(lim), Parameters: params})
	}
	return out
}

// Handles reports whether name is one of the tools returned by Tools, so
// that an agent can route tool calls to the Pad.
func (p *Pad) Handles(name string) bool {
	_, ok := lookupTool(name)
	return ok
}

// Call runs the tool call name with arguments, the JSON object the model
// produced; an empty string counts as {}. It returns the text to hand back
// to the model as the call's result. That is `stored "user_id"`, the
// recalled value as JSON, `no variable named "x"`, `deleted "x"`,
// "observation recorded", "failure recorded", the Context or
// "the scratchpad is empty".
//
// An unknown name is ErrUnknownTool. Arguments that are not a JSON object,
// miss a required field, have a field of the wrong type or an unknown
// field give an *ArgumentError, which wraps ErrInvalidArguments and names
// the field. Errors from the operation itself (ErrInvalidKey,
// ErrValueTooLarge, ErrFull) are returned as they are. Every error message
// is suitable for showing to the model. If ctx is already done, its error
// is returned and nothing is run.
func (p *Pad) Call(ctx context.Context, name string, arguments string) (string, error) {
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			return "", err
		}
	}
	t, ok := lookupTool(name)
	if !ok {
		return "", fmt.Errorf("%w: %q; the scratchpad tools are %s", ErrUnknownTool, clip(name), strings.Join(toolNames(), ", "))
	}
	args, err := parseArguments(t, arguments)
	if err != nil {
		return "", err
	}
	return t.run(p, args)
}

// toolNames returns the names of the tools.
func toolNames() []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.name
	}
	return names
}

// parseArguments decodes and checks the arguments of a call to t.
func parseArguments(t *toolSpec, arguments string) (map[string]json.RawMessage, error) {
	bad := func(field, reason string) error {
		return &ArgumentError{Tool: t.name, Field: field, Reason: reason}
	}
	args := map[string]json.RawMessage{}
	if strings.TrimSpace(arguments) != "" {
		if !json.Valid([]byte(arguments)) {
			return nil, bad("", "the arguments are not valid JSON")
		}
		args = nil
		if err := json.Unmarshal([]byte(arguments), &args); err != nil || args == nil {
			return nil, bad("", "the arguments must be a JSON object")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(args)) {
		if !slices.ContainsFunc(t.fields, func(f fieldSpec) bool { return f.name == k }) {
			return nil, bad(clip(k), "is not an argument of this tool"+expected(t))
		}
	}
	for _, f := range t.fields {
		raw, ok := args[f.name]
		if !ok {
			return nil, bad(f.name, "is required")
		}
		if f.kind == kindString {
			var s string
			if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
				return nil, bad(f.name, "must be a string, not "+jsonType(raw))
			}
		}
	}
	return args, nil
}

// expected lists the arguments of t for error messages.
func expected(t *toolSpec) string {
	if len(t.fields) == 0 {
		return ", which takes no arguments"
	}
	names := make([]string, len(t.fields))
	for i, f := range t.fields {
		names[i] = f.name
	}
	return "; its arguments are " + strings.Join(names, ", ")
}

// stringArg returns a string argument already checked by parseArguments.
func stringArg(args map[string]json.RawMessage, name string) string {
	var s string
	_ = json.Unmarshal(args[name], &s) // checked by parseArguments
	return s
}

// jsonType names the type of a valid JSON value for error messages.
func jsonType(raw json.RawMessage) string {
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
