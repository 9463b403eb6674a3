package facts

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
	"github.com/agentmem/agentmem/internal/textcut"
)

// Names of the tools a Toolbox offers.
const (
	ToolRemember = "remember"
	ToolRecall   = "recall"
	ToolForget   = "forget"
)

// ErrUnknownTool reports a tool call whose name is not one of the
// Toolbox's tools.
var ErrUnknownTool = errors.New("facts: unknown tool")

// ArgumentError describes invalid arguments to a tool call. It wraps
// agentmem.ErrInvalid, and its message can be handed back to the model.
type ArgumentError = agentmem.ToolArgumentError

// Tool describes a function-calling tool as chat APIs expect it.
type Tool = agentmem.Tool

// Toolbox lets an agent manage what it remembers about one user by
// calling tools, the rule-free alternative to an Extractor: remember
// {text}, recall {query} and forget {id, reason}. It only ever reads and
// writes the facts of its Tenant and UserID. A Toolbox is a value: make
// one per user (or per turn); its methods are safe for concurrent use.
type Toolbox struct {
	Memory *Memory
	Tenant string
	UserID string
	// Source is recorded on remembered facts; its Agent is also the "by"
	// of forgets ("agent" when empty).
	Source Source
	// K is the most facts recall returns; 0 means DefaultK.
	K int
}

// toolArgs are the arguments of all three tools; each tool uses some.
type toolArgs struct {
	Text   *string `json:"text"`
	Query  *string `json:"query"`
	ID     *string `json:"id"`
	Reason *string `json:"reason"`
}

// toolDef defines one tool.
type toolDef struct {
	name, description string
	params            []string // required, in order
}

var toolDefs = []toolDef{
	{ToolRemember, "Remember a durable fact about the user for future conversations: a preference, circumstance, relationship, plan or constraint that the user stated. " +
		"Write it as one short self-contained sentence in the third person, for example \"Prefers metric units.\". " +
		"Remembering a fact that is already known reinforces it. Do not store secrets such as passwords.", []string{"text"}},
	{ToolRecall, "Search what is remembered about the user. Returns the most relevant facts with their id and confidence (0 to 1; low means old or uncertain).", []string{"query"}},
	{ToolForget, "Forget a remembered fact for good, for example when the user asks you to or it is wrong. Give its id (from recall) and why. " +
		"When a fact has only changed, remember the new one instead.", []string{"id", "reason"}},
}

// paramSchemas are the JSON Schemas of the arguments.
var paramSchemas = map[string]json.RawMessage{
	"text":   json.RawMessage(fmt.Sprintf(`{"type":"string","minLength":1,"maxLength":%d,"description":"The fact."}`, MaxTextBytes)),
	"query":  json.RawMessage(`{"type":"string","description":"What to look for, in a few words; empty lists the most confident facts."}`),
	"id":     json.RawMessage(`{"type":"string","minLength":1,"description":"The id of the fact, as recall shows it."}`),
	"reason": json.RawMessage(fmt.Sprintf(`{"type":"string","minLength":1,"maxLength":%d,"description":"Why it is forgotten."}`, MaxReasonBytes)),
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

// Call runs the tool call name with arguments (a JSON object; "" counts
// as {}) and returns the text to hand back to the model. An unknown name
// is ErrUnknownTool; bad arguments an *ArgumentError; forgetting a fact
// that this user does not have wraps agentmem.ErrNotFound. Error messages
// are written so they can be shown to the model.
func (t *Toolbox) Call(ctx context.Context, name, arguments string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	i := slices.IndexFunc(toolDefs, func(d toolDef) bool { return d.name == name })
	if i < 0 {
		return "", fmt.Errorf("%w: %.64q; the tools are remember, recall and forget", ErrUnknownTool, name)
	}
	args, err := decodeToolArgs(toolDefs[i], arguments)
	if err != nil {
		return "", err
	}
	switch name {
	case ToolRemember:
		return t.remember(ctx, *args.Text)
	case ToolRecall:
		return t.recall(ctx, *args.Query)
	default:
		return t.forget(ctx, *args.ID, *args.Reason)
	}
}

func (t *Toolbox) remember(ctx context.Context, text string) (string, error) {
	res, err := t.Memory.Remember(ctx, RememberRequest{Tenant: t.Tenant, UserID: t.UserID, Text: strings.TrimSpace(text), Source: t.Source})
	if err != nil {
		return "", err
	}
	switch res.Outcome {
	case OutcomeAdded:
		return fmt.Sprintf("remembered [%s] %s", res.Fact.ID, res.Fact.Text), nil
	case OutcomeReinforced:
		return fmt.Sprintf("already known, reinforced [%s] %s (confidence %.2f)", res.Fact.ID, res.Fact.Text, res.Fact.Confidence), nil
	}
	return fmt.Sprintf("already known [%s] %s", res.Fact.ID, res.Fact.Text), nil
}

func (t *Toolbox) recall(ctx context.Context, query string) (string, error) {
	hits, err := t.Memory.Search(ctx, SearchRequest{Tenant: t.Tenant, UserID: t.UserID, Query: query, K: t.K})
	if err != nil {
		return "", err
	}
	if len(hits) == 0 {
		return "nothing remembered about the user matches", nil
	}
	var b strings.Builder
	for _, h := range hits {
		fmt.Fprintf(&b, "[%s] %s (confidence %.2f)\n", h.Fact.ID, h.Fact.Text, h.Confidence)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func (t *Toolbox) forget(ctx context.Context, id, reason string) (string, error) {
	f, err := t.Memory.Get(ctx, t.Tenant, id)
	if err == nil && f.UserID != t.UserID {
		// Another user's fact: as far as this user's tools go, it does
		// not exist.
		err = fmt.Errorf("facts: fact %.80q: %w", id, agentmem.ErrNotFound)
	}
	if err == nil {
		by := t.Source.Agent
		if by == "" {
			by = "agent"
		}
		err = t.Memory.Forget(ctx, t.Tenant, id, by, reason)
	}
	if errors.Is(err, agentmem.ErrNotFound) {
		return "", fmt.Errorf("no remembered fact has the id %.80q; use recall to find it: %w", id, agentmem.ErrNotFound)
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("forgot [%s]", id), nil
}

// decodeToolArgs decodes and checks the arguments of a call to d: a JSON
// object with exactly d's parameters, each a string.
func decodeToolArgs(d toolDef, arguments string) (toolArgs, error) {
	bad := func(field, reason string) error { return &ArgumentError{Tool: d.name, Field: field, Reason: reason} }
	var args toolArgs
	data := bytes.TrimSpace([]byte(arguments))
	if len(data) == 0 {
		data = []byte("{}")
	}
	if data[0] != '{' {
		return args, bad("", "the arguments must be a JSON object")
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return args, bad("", "the arguments are not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return args, bad("", "the arguments have text after the JSON object")
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(d.params, k) {
			return args, bad(textcut.Prefix(k, 64), "is not an argument of this tool; its arguments are "+strings.Join(d.params, ", "))
		}
	}
	for _, p := range d.params {
		v, ok := raw[p]
		if !ok {
			return args, bad(p, "is required")
		}
		var s string
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return args, bad(p, "must be a string")
		}
		switch p {
		case "text":
			args.Text = &s
		case "query":
			args.Query = &s
		case "id":
			args.ID = &s
		case "reason":
			args.Reason = &s
		}
	}
	return args, nil
}
