package blocks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agentmem/agentmem"
)

// Names of the tools a Toolbox offers.
const (
	ToolAppend  = "memory_append"
	ToolReplace = "memory_replace"
	ToolRethink = "memory_rethink"
)

// ErrUnknownTool reports a tool call whose name is not one of the
// Toolbox's tools.
var ErrUnknownTool = errors.New("blocks: unknown tool")

// ArgumentError describes invalid arguments to a tool call. It wraps
// agentmem.ErrInvalid, and its message can be handed back to the model.
type ArgumentError = agentmem.ToolArgumentError

// Tool describes a function-calling tool as chat APIs expect it.
type Tool = agentmem.Tool

// Toolbox lets an agent edit the memory blocks its context shows, by
// calling tools: memory_append {label, text}, memory_replace {label, old,
// new} and memory_rethink {label, value}. A label names the session's
// block, or else its user's (as the context shows them, blocks.Shown).
// The tools refuse read-only blocks. memory_append and memory_replace
// edit existing blocks; memory_rethink of a label no block has starts a
// new block of the session (ResolveNew). The application creates the
// others (Memory.Set). A Toolbox is a value: make one
// per session; its methods are safe for concurrent use.
type Toolbox struct {
	Memory *Memory
	Tenant string
	// SessionID and UserID are the owners whose blocks the tools edit;
	// either may be empty.
	SessionID string
	UserID    string
	// By is recorded as who made the changes; empty means "agent".
	By string
}

// toolDef defines one tool.
type toolDef struct {
	name, description string
	params            []string // all required, in order
}

var toolDefs = []toolDef{
	{ToolAppend, "Append text to one of your memory blocks (the labelled sections of your system prompt), on a new line: " +
		"note something you will need in later turns, such as what you learnt about the user or the state of your task. " +
		"A block has a size limit in characters, shown as chars=\"used/limit\"; an append past it is refused, so tidy the block with memory_rethink first.", []string{"label", "text"}},
	{ToolReplace, "Replace text in one of your memory blocks: old must be copied exactly from the block and occur in it exactly once; " +
		"new replaces it (empty new deletes it). Use it to correct or update one detail without rewriting the block.", []string{"label", "old", "new"}},
	{ToolRethink, "Rewrite one of your memory blocks whole with a new value: use it to reorganise, condense or correct a block, " +
		"for example when it nears its size limit. The value replaces everything the block held. A label no block has starts a new block.", []string{"label", "value"}},
}

// paramSchemas are the JSON Schemas of the arguments.
var paramSchemas = map[string]string{
	"label": fmt.Sprintf(`{"type":"string","minLength":1,"maxLength":%d,"description":"The block's label, as its tag in your system prompt shows it (human for <human>)."}`, MaxLabelBytes),
	"text":  `{"type":"string","minLength":1,"description":"The text to add."}`,
	"old":   `{"type":"string","minLength":1,"description":"The text to replace, exactly as the block has it; it must occur once."}`,
	"new":   `{"type":"string","description":"The text that replaces it; empty deletes it."}`,
	"value": `{"type":"string","description":"The block's whole new text."}`,
}

// Tools returns the tools' definitions. Each schema is a strict object
// schema: every argument is required and no other is allowed.
func (t *Toolbox) Tools() []Tool {
	out := make([]Tool, len(toolDefs))
	for i, d := range toolDefs {
		var b strings.Builder
		b.WriteString(`{"type":"object","properties":{`)
		for j, p := range d.params {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q:%s", p, paramSchemas[p])
		}
		req, _ := json.Marshal(d.params)
		fmt.Fprintf(&b, `},"required":%s,"additionalProperties":false}`, req)
		out[i] = Tool{Name: d.name, Description: d.description, Parameters: json.RawMessage(b.String())}
	}
	return out
}

// Handles reports whether name is one of the Toolbox's tools.
func (t *Toolbox) Handles(name string) bool {
	return slices.ContainsFunc(toolDefs, func(d toolDef) bool { return d.name == name })
}

// Resolve returns the key of the block a label names for the tools: the
// session's block with the label, or else the user's; an error wrapping
// agentmem.ErrNotFound, listing the labels there are, when neither has
// one.
func (t *Toolbox) Resolve(ctx context.Context, label string) (Key, error) {
	if err := ValidateLabel(label); err != nil {
		return Key{}, err
	}
	var owners []Owner
	if t.SessionID != "" {
		owners = append(owners, Session(t.SessionID))
	}
	if t.UserID != "" {
		owners = append(owners, User(t.UserID))
	}
	var user, session []Block
	for _, o := range owners {
		k := Key{Tenant: t.Tenant, Owner: o, Label: label}
		_, err := t.Memory.Get(ctx, k)
		if err == nil {
			return k, nil
		}
		if !errors.Is(err, agentmem.ErrNotFound) {
			return Key{}, err
		}
		bs, err := t.Memory.List(ctx, t.Tenant, o)
		if err != nil {
			return Key{}, err
		}
		if o.Kind == OwnerSession {
			session = bs
		} else {
			user = bs
		}
	}
	var labels []string
	for _, b := range Shown(user, session) {
		labels = append(labels, b.Label)
	}
	there := "there are no memory blocks"
	if len(labels) > 0 {
		there = "the blocks are " + strings.Join(labels, ", ")
	}
	return Key{}, fmt.Errorf("no memory block is labelled %.80q; %s: %w", label, there, agentmem.ErrNotFound)
}

// ResolveNew is Resolve for a rewrite (memory_rethink). When no block has
// the label, it names a new block for the rewrite to create, so that an
// agent can start the notes it needs. The new block is the session's, or
// the user's when the Toolbox has no session.
func (t *Toolbox) ResolveNew(ctx context.Context, label string) (Key, error) {
	k, err := t.Resolve(ctx, label)
	if !errors.Is(err, agentmem.ErrNotFound) {
		return k, err
	}
	switch {
	case t.SessionID != "":
		return Key{Tenant: t.Tenant, Owner: Session(t.SessionID), Label: label}, nil
	case t.UserID != "":
		return Key{Tenant: t.Tenant, Owner: User(t.UserID), Label: label}, nil
	}
	return k, err
}

// Call runs the tool call name with arguments (a JSON object; "" counts
// as {}) and returns the text to hand back to the model. An unknown name
// is ErrUnknownTool; bad arguments an *ArgumentError; a missing block
// wraps agentmem.ErrNotFound; a read-only block is a *ReadOnlyError, an
// edit past the limit a *LimitError, a replace whose old text does not
// occur once a *MatchError. Error messages are written so they can be
// shown to the model.
func (t *Toolbox) Call(ctx context.Context, name, arguments string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	i := slices.IndexFunc(toolDefs, func(d toolDef) bool { return d.name == name })
	if i < 0 {
		return "", fmt.Errorf("%w: %.64q; the tools are %s, %s and %s", ErrUnknownTool, name, ToolAppend, ToolReplace, ToolRethink)
	}
	args, err := decodeToolArgs(toolDefs[i], arguments)
	if err != nil {
		return "", err
	}
	resolve := t.Resolve
	if name == ToolRethink {
		resolve = t.ResolveNew
	}
	k, err := resolve(ctx, args["label"])
	if err != nil {
		return "", err
	}
	by := t.By
	if by == "" {
		by = "agent"
	}
	e := Edit{By: by, Agent: true}
	var b Block
	switch name {
	case ToolAppend:
		b, err = t.Memory.Append(ctx, k, args["text"], e)
	case ToolReplace:
		b, err = t.Memory.Replace(ctx, k, args["old"], args["new"], e)
	default:
		b, err = t.Memory.Set(ctx, SetRequest{Key: k, Value: args["value"], Edit: e})
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("updated memory block %q (version %d, %d of %d characters)", b.Label, b.Version, b.Chars(), b.Limit), nil
}

// decodeToolArgs decodes and checks the arguments of a call to d: a JSON
// object with exactly d's parameters, each a string.
func decodeToolArgs(d toolDef, arguments string) (map[string]string, error) {
	bad := func(field, reason string) error { return &ArgumentError{Tool: d.name, Field: field, Reason: reason} }
	data := bytes.TrimSpace([]byte(arguments))
	if len(data) == 0 {
		data = []byte("{}")
	}
	if data[0] != '{' {
		return nil, bad("", "the arguments must be a JSON object")
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, bad("", "the arguments are not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bad("", "the arguments have text after the JSON object")
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(d.params, k) {
			return nil, bad(fmt.Sprintf("%.64s", k), "is not an argument of this tool; its arguments are "+strings.Join(d.params, ", "))
		}
	}
	out := make(map[string]string, len(d.params))
	for _, p := range d.params {
		v, ok := raw[p]
		if !ok {
			return nil, bad(p, "is required")
		}
		var s string
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return nil, bad(p, "must be a string")
		}
		out[p] = s
	}
	return out, nil
}
