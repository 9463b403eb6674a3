package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/jsoncheck"
	"github.com/agentmem/agentmem/internal/textcut"
	"github.com/agentmem/agentmem/store"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool names.
const (
	ToolCreateSession = "create_session"
	ToolListSessions  = "list_sessions"
	ToolAppend        = "append"
	ToolGetContext    = "get_context"
	ToolPop           = "pop"
	// The facts tools, registered when Config.Facts is set.
	ToolRemember    = "remember"
	ToolRecallFacts = "recall_facts"
	ToolForget      = "forget"
	// The fact extraction tool, registered when Config.Facts and
	// Config.Extractor are set.
	ToolExtractFacts = "extract_facts"
	// The recall tool, registered when Config.Recall is set.
	ToolSearchMemory = "search_memory"
	// The memory blocks tools, registered when Config.Blocks is set.
	ToolMemoryList    = "memory_list"
	ToolMemoryAppend  = "memory_append"
	ToolMemoryReplace = "memory_replace"
	ToolMemoryRethink = "memory_rethink"
)

// toolAnnotations describe each tool to MCP hosts, which show the title
// and use the hints to tell reads from writes. A host may run read-only
// tools without asking, and ask before a destructive one. Every tool works
// on agentmem's own store, a closed world.
var toolAnnotations = map[string]sdk.ToolAnnotations{
	ToolCreateSession: {Title: "Create a session", DestructiveHint: ptr(false)},
	ToolListSessions:  {Title: "List sessions", ReadOnlyHint: true},
	// With an idempotency_key a retry stores nothing more; without one it
	// appends again, so the tool as a whole is not idempotent.
	ToolAppend:     {Title: "Append messages to a session", DestructiveHint: ptr(false)},
	ToolGetContext: {Title: "Get a session's context", ReadOnlyHint: true},
	ToolPop:        {Title: "Remove a session's newest message", DestructiveHint: ptr(true)},
	// Remembering a known fact again reinforces it: not idempotent.
	ToolRemember:    {Title: "Remember a fact about a user", DestructiveHint: ptr(false)},
	ToolRecallFacts: {Title: "Recall facts about a user", ReadOnlyHint: true},
	ToolForget:      {Title: "Forget a fact about a user", DestructiveHint: ptr(true), IdempotentHint: true},
	// An extraction may supersede a fact (it no longer holds; its history
	// keeps it), and one sent again reinforces what it taught.
	ToolExtractFacts: {Title: "Learn facts about a user from a turn", DestructiveHint: ptr(true)},
	ToolSearchMemory: {Title: "Search past conversations", ReadOnlyHint: true},
	ToolMemoryList:   {Title: "List a session's memory blocks", ReadOnlyHint: true},
	// Appending the same text again appends it twice: not idempotent.
	ToolMemoryAppend: {Title: "Append to a memory block", DestructiveHint: ptr(false)},
	// A replace or a rewrite takes text out of the block (its history
	// keeps it).
	ToolMemoryReplace: {Title: "Replace text in a memory block", DestructiveHint: ptr(true)},
	ToolMemoryRethink: {Title: "Rewrite a memory block", DestructiveHint: ptr(true), IdempotentHint: true},
}

func ptr[T any](v T) *T { return &v }

// tools holds what every tool handler of one tenant needs.
type tools struct {
	cfg    *Config
	tenant string
}

// register adds the tools of the configuration to sv. The session tools
// are always added, and the facts tools with Config.Facts (extract_facts
// with Config.Extractor too). search_memory comes with Config.Recall, and
// the memory blocks tools with Config.Blocks.
func (t *tools) register(sv *sdk.Server) error {
	errs := []error{
		add(sv, ToolCreateSession, createSessionDescription, createSessionSchema, t.createSession),
		add(sv, ToolListSessions, listSessionsDescription, listSessionsSchema, t.listSessions),
		add(sv, ToolAppend, appendDescription, appendSchema, t.append),
		add(sv, ToolGetContext, getContextDescription, getContextSchema, t.getContext),
		add(sv, ToolPop, popDescription, popSchema, t.pop),
	}
	if t.cfg.Facts != nil {
		errs = append(errs,
			add(sv, ToolRemember, rememberDescription, rememberSchema, t.remember),
			add(sv, ToolRecallFacts, recallFactsDescription, recallFactsSchema, t.recallFacts),
			add(sv, ToolForget, forgetDescription, forgetSchema, t.forget),
		)
		if t.cfg.Extractor != nil {
			errs = append(errs, add(sv, ToolExtractFacts, extractFactsDescription, extractFactsSchema, t.extractFacts))
		}
	}
	if t.cfg.Recall != nil {
		errs = append(errs, add(sv, ToolSearchMemory, searchMemoryDescription, searchMemorySchema, t.searchMemory))
	}
	if t.cfg.Blocks != nil {
		errs = append(errs,
			add(sv, ToolMemoryList, memoryListDescription, memoryListSchema, t.memoryList),
			add(sv, ToolMemoryAppend, memoryAppendDescription, memoryAppendSchema, t.memoryAppend),
			add(sv, ToolMemoryReplace, memoryReplaceDescription, memoryReplaceSchema, t.memoryReplace),
			add(sv, ToolMemoryRethink, memoryRethinkDescription, memoryRethinkSchema, t.memoryRethink),
		)
	}
	return errors.Join(errs...)
}

// handler is a typed tool handler: input in, output or an error out.
type handler[In, Out any] func(ctx context.Context, in In) (Out, error)

// add registers a typed tool whose input schema is In's, with edits.
func add[In, Out any](sv *sdk.Server, name, description string, edits []edit, h handler[In, Out]) error {
	in, err := schemaFor[In](edits...)
	if err != nil {
		return err
	}
	ann, ok := toolAnnotations[name]
	if !ok {
		return fmt.Errorf("mcp: the tool %s has no annotations", name)
	}
	ann.OpenWorldHint = ptr(false)
	sdk.AddTool(sv, &sdk.Tool{Name: name, Title: ann.Title, Description: description, InputSchema: in, Annotations: &ann},
		func(ctx context.Context, req *sdk.CallToolRequest, input In) (*sdk.CallToolResult, Out, error) {
			var zero Out
			if req != nil && req.Params != nil {
				if err := checkArguments(req.Params.Arguments); err != nil {
					return nil, zero, err
				}
			}
			out, err := h(withCaller(ctx, req), input)
			return nil, out, err
		})
	return nil
}

// checkArguments refuses the raw arguments of a tool call that the SDK
// would decode with a loss, as the HTTP API refuses such a body
// (jsoncheck). That is invalid UTF-8 or a lone UTF-16 surrogate escape,
// which would be stored as U+FFFD, or a key repeated in an object, of
// which the last would win. The error is a JSON-RPC error (invalid params)
// that names where the problem is: the call is malformed, not a tool
// failure.
func checkArguments(args json.RawMessage) error {
	if len(args) == 0 {
		return nil
	}
	err := jsoncheck.Check(args)
	if err == nil {
		return nil
	}
	msg := "invalid arguments: " + err.Error()
	var je *jsoncheck.Error
	if errors.As(err, &je) {
		if je.Path == "" {
			msg = "invalid arguments: the arguments " + je.Reason
		} else {
			msg = "invalid arguments: " + je.Path + " " + je.Reason
		}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

// callerKey is the context key of the caller's name (see caller).
type callerKey struct{}

// maxClientName bounds the client name a caller's name keeps.
const maxClientName = 64

// withCaller records in ctx who makes the tool call req. That is "mcp:"
// and the name the client announced at initialization, or "mcp" when it
// gave none; a stateless HTTP request has no initialization.
func withCaller(ctx context.Context, req *sdk.CallToolRequest) context.Context {
	name := ""
	if req != nil && req.Session != nil {
		if p := req.Session.InitializeParams(); p != nil && p.ClientInfo != nil {
			name = p.ClientInfo.Name
		}
	}
	return context.WithValue(ctx, callerKey{}, callerName(name))
}

// callerName is the caller's name for a client name. The name is the
// client's to choose, so it is cleaned (valid UTF-8, no control
// characters) and cut to maxClientName bytes.
func callerName(client string) string {
	client = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, strings.ToValidUTF8(client, ""))
	client = strings.TrimSpace(textcut.Prefix(client, maxClientName))
	if client == "" {
		return "mcp"
	}
	return "mcp:" + client
}

// caller returns who makes the current tool call (see withCaller). It is
// the "by" of the forgets it makes, and the agent of the facts it
// remembers outside any session with an agent.
func caller(ctx context.Context) string {
	if c, ok := ctx.Value(callerKey{}).(string); ok {
		return c
	}
	return "mcp"
}

// session returns a session of the tenant: one that does not exist and one
// of another tenant are both ErrNotFound.
func (t *tools) session(ctx context.Context, id string) (*store.Session, error) {
	if err := store.ValidateID(id); err != nil {
		return nil, badSessionID(id)
	}
	s, err := t.cfg.Sessions.Get(ctx, t.tenant, id)
	if errors.Is(err, agentmem.ErrNotFound) {
		return nil, sessionNotFound(id)
	}
	return s, err
}

// badSessionID is the error for a malformed session ID.
func badSessionID(id string) error {
	return invalid("session_id", "%.140q is not a session ID: session IDs are any text of 1 to %d bytes without control characters, but \".\" and \"..\"", id, store.MaxIDLen)
}

// Schema edits shared by several tools.
var sessionIDEdits = []func(*jsonschema.Schema){length(1, store.MaxIDLen), pattern(sessionIDPattern)}

// sessionIDPattern is store.ValidateID's rule as a regular expression, as
// far as one that both Go and ECMAScript read can say it: no control
// characters. The tools also refuse "." and ".." and check the length in
// bytes.
const sessionIDPattern = `^[^\x00-\x1f\x7f-\x9f]+$`
