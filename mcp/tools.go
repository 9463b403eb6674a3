package mcp

import (
	"context"
	"errors"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool names.
const (
	ToolCreateSession = "create_session"
	ToolListSessions  = "list_sessions"
	ToolAppend        = "append"
	ToolGetContext    = "get_context"
)

// tools holds what every tool handler of one tenant needs.
type tools struct {
	cfg    *Config
	tenant string
}

// register adds every tool to sv.
func (t *tools) register(sv *sdk.Server) error {
	return errors.Join(
		add(sv, ToolCreateSession, createSessionDescription, createSessionSchema, t.createSession),
		add(sv, ToolListSessions, listSessionsDescription, listSessionsSchema, t.listSessions),
		add(sv, ToolAppend, appendDescription, appendSchema, t.append),
		add(sv, ToolGetContext, getContextDescription, getContextSchema, t.getContext),
	)
}

// handler is a typed tool handler: input in, output or an error out.
type handler[In, Out any] func(ctx context.Context, in In) (Out, error)

// add registers a typed tool whose input schema is In's, with edits.
func add[In, Out any](sv *sdk.Server, name, description string, edits []edit, h handler[In, Out]) error {
	in, err := schemaFor[In](edits...)
	if err != nil {
		return err
	}
	sdk.AddTool(sv, &sdk.Tool{Name: name, Description: description, InputSchema: in},
		func(ctx context.Context, _ *sdk.CallToolRequest, input In) (*sdk.CallToolResult, Out, error) {
			out, err := h(ctx, input)
			return nil, out, err
		})
	return nil
}

// session returns a session of the tenant: one that does not exist and one
// of another tenant are both ErrNotFound.
func (t *tools) session(ctx context.Context, id string) (*store.Session, error) {
	if err := store.ValidateID(id); err != nil {
		return nil, badSessionID(id)
	}
	s, err := t.cfg.Store.Get(ctx, id)
	if errors.Is(err, agentmem.ErrNotFound) || (err == nil && s.Tenant != t.tenant) {
		return nil, sessionNotFound(id)
	}
	return s, err
}

// badSessionID is the error for a malformed session ID.
func badSessionID(id string) error {
	return invalid("session_id", "%q is not a session ID: session IDs are 1 to %d characters from A-Z a-z 0-9 . _ : -, starting with a letter or digit", id, store.MaxIDLen)
}

// Schema edits shared by several tools.
var sessionIDEdits = []func(*jsonschema.Schema){length(1, store.MaxIDLen), pattern(sessionIDPattern)}

// sessionIDPattern is store.ValidateID's rule as a regular expression.
const sessionIDPattern = `^[A-Za-z0-9][A-Za-z0-9._:-]*$`
