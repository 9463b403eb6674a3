package mcp

import (
	"context"
	"time"

	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/store"
	"github.com/google/jsonschema-go/jsonschema"
)

// BlockInfo is a memory block as the tools show it.
type BlockInfo struct {
	Label       string    `json:"label" jsonschema:"the block's label, its tag in the context (human for <human>)"`
	Owner       string    `json:"owner" jsonschema:"user: the block of the session's user, shown in each of the user's sessions; session: the session's own"`
	Value       string    `json:"value" jsonschema:"the block's text"`
	Chars       int       `json:"chars" jsonschema:"the value's length in characters"`
	Limit       int       `json:"limit" jsonschema:"the most characters the block may hold: an edit past it is refused"`
	Description string    `json:"description,omitempty" jsonschema:"what the block is for"`
	ReadOnly    bool      `json:"read_only" jsonschema:"true: the memory tools cannot edit it"`
	Version     int64     `json:"version" jsonschema:"1 when created, one more at each change"`
	UpdatedAt   time.Time `json:"updated_at" jsonschema:"when it last changed"`
}

func blockInfo(b blocks.Block) BlockInfo {
	return BlockInfo{Label: b.Label, Owner: string(b.Owner.Kind), Value: b.Value, Chars: b.Chars(), Limit: b.Limit,
		Description: b.Description, ReadOnly: b.ReadOnly, Version: b.Version, UpdatedAt: b.UpdatedAt}
}

// toolbox returns the blocks toolbox of a session of the tenant: its
// blocks and its user's, edits recorded as the session's agent or the
// MCP client.
func (t *tools) toolbox(ctx context.Context, sessionID string) (*blocks.Toolbox, *store.Session, error) {
	s, err := t.session(ctx, sessionID)
	if err != nil {
		return nil, nil, err
	}
	by := caller(ctx)
	if s.Agent != "" {
		by = s.Agent
	}
	return &blocks.Toolbox{Memory: t.cfg.Blocks, Tenant: t.tenant, SessionID: s.ID, UserID: s.UserID, By: by}, s, nil
}

// memory_list

// MemoryListInput is the input of memory_list.
type MemoryListInput struct {
	SessionID string `json:"session_id" jsonschema:"the session whose memory blocks to list: its own and its user's"`
}

// MemoryListOutput is the output of memory_list.
type MemoryListOutput struct {
	Blocks []BlockInfo `json:"blocks" jsonschema:"the blocks the session's context shows after its system prompt, in order: its user's, then its own (a session's block hides its user's of the same label)"`
}

var memoryListSchema = []edit{at("session_id", sessionIDEdits...)}

const memoryListDescription = `List the memory blocks of a session: the labelled sections shown after the system prompt of every context of the session (get_context shows them in place), its user's and its own, ` +
	`each with its value, its size against its limit in characters and whether it is read-only. Edit them with memory_append, memory_replace and memory_rethink.`

func (t *tools) memoryList(ctx context.Context, in MemoryListInput) (MemoryListOutput, error) {
	const op = "memory_list"
	tb, _, err := t.toolbox(ctx, in.SessionID)
	if err != nil {
		return MemoryListOutput{}, t.toolError(ctx, op, err)
	}
	var user, own []blocks.Block
	if tb.UserID != "" {
		if user, err = t.cfg.Blocks.List(ctx, t.tenant, blocks.User(tb.UserID)); err != nil {
			return MemoryListOutput{}, t.toolError(ctx, op, err)
		}
	}
	if own, err = t.cfg.Blocks.List(ctx, t.tenant, blocks.Session(tb.SessionID)); err != nil {
		return MemoryListOutput{}, t.toolError(ctx, op, err)
	}
	out := MemoryListOutput{Blocks: []BlockInfo{}}
	for _, b := range blocks.Shown(user, own) {
		out.Blocks = append(out.Blocks, blockInfo(b))
	}
	return out, nil
}

// BlockOutput is the output of the memory editing tools.
type BlockOutput struct {
	Block BlockInfo `json:"block" jsonschema:"the block after the edit"`
}

// edit runs one of the blocks toolbox's edits for the session.
func (t *tools) editBlock(ctx context.Context, op, sessionID, label string, run func(tb *blocks.Toolbox, k blocks.Key, e blocks.Edit) (blocks.Block, error)) (BlockOutput, error) {
	tb, _, err := t.toolbox(ctx, sessionID)
	if err != nil {
		return BlockOutput{}, t.toolError(ctx, op, err)
	}
	resolve := tb.Resolve
	if op == ToolMemoryRethink {
		resolve = tb.ResolveNew // a rewrite may start a block
	}
	k, err := resolve(ctx, label)
	if err != nil {
		return BlockOutput{}, t.toolError(ctx, op, err)
	}
	b, err := run(tb, k, blocks.Edit{By: tb.By, Agent: true})
	if err != nil {
		return BlockOutput{}, t.toolError(ctx, op, err)
	}
	return BlockOutput{Block: blockInfo(b)}, nil
}

var labelEdits = []func(*jsonschema.Schema){length(1, blocks.MaxLabelBytes)}

// memory_append

// MemoryAppendInput is the input of memory_append.
type MemoryAppendInput struct {
	SessionID string `json:"session_id" jsonschema:"the session whose memory block to edit"`
	Label     string `json:"label" jsonschema:"the block's label: the session's block with the label, or else its user's"`
	Text      string `json:"text" jsonschema:"the text to add at the end of the block, on a new line"`
}

var memoryAppendSchema = []edit{at("session_id", sessionIDEdits...), at("label", labelEdits...), at("text", length(1, blocks.MaxLimit*4))}

const memoryAppendDescription = `Append text to a memory block of a session, on a new line: note what later turns will need, such as what you learnt about the user or where the task stands. ` +
	`A block past its limit in characters is refused, never cut: condense it with memory_rethink first. Read-only blocks cannot be edited.`

func (t *tools) memoryAppend(ctx context.Context, in MemoryAppendInput) (BlockOutput, error) {
	return t.editBlock(ctx, ToolMemoryAppend, in.SessionID, in.Label, func(tb *blocks.Toolbox, k blocks.Key, e blocks.Edit) (blocks.Block, error) {
		return tb.Memory.Append(ctx, k, in.Text, e)
	})
}

// memory_replace

// MemoryReplaceInput is the input of memory_replace.
type MemoryReplaceInput struct {
	SessionID string `json:"session_id" jsonschema:"the session whose memory block to edit"`
	Label     string `json:"label" jsonschema:"the block's label: the session's block with the label, or else its user's"`
	Old       string `json:"old" jsonschema:"the text to replace, exactly as the block has it; it must occur in it exactly once"`
	New       string `json:"new" jsonschema:"the text that replaces it; empty deletes it"`
}

var memoryReplaceSchema = []edit{at("session_id", sessionIDEdits...), at("label", labelEdits...), at("old", length(1, blocks.MaxLimit*4)), at("new", length(0, blocks.MaxLimit*4))}

const memoryReplaceDescription = `Replace text in a memory block of a session: old must be copied exactly from the block and occur in it exactly once (else nothing changes and the error says how often it occurs); ` +
	`new replaces it, and an empty new deletes it. Use it to correct or update one detail.`

func (t *tools) memoryReplace(ctx context.Context, in MemoryReplaceInput) (BlockOutput, error) {
	return t.editBlock(ctx, ToolMemoryReplace, in.SessionID, in.Label, func(tb *blocks.Toolbox, k blocks.Key, e blocks.Edit) (blocks.Block, error) {
		return tb.Memory.Replace(ctx, k, in.Old, in.New, e)
	})
}

// memory_rethink

// MemoryRethinkInput is the input of memory_rethink.
type MemoryRethinkInput struct {
	SessionID string `json:"session_id" jsonschema:"the session whose memory block to edit"`
	Label     string `json:"label" jsonschema:"the block's label: the session's block with the label, or else its user's"`
	Value     string `json:"value" jsonschema:"the block's whole new text"`
}

var memoryRethinkSchema = []edit{at("session_id", sessionIDEdits...), at("label", labelEdits...), at("value", length(0, blocks.MaxLimit*4))}

const memoryRethinkDescription = `Rewrite a memory block of a session whole: reorganise, condense or correct it, for example when it nears its limit. The value replaces everything the block held; writing the same value changes nothing. A label no block has starts a new block of the session.`

func (t *tools) memoryRethink(ctx context.Context, in MemoryRethinkInput) (BlockOutput, error) {
	return t.editBlock(ctx, ToolMemoryRethink, in.SessionID, in.Label, func(tb *blocks.Toolbox, k blocks.Key, e blocks.Edit) (blocks.Block, error) {
		return tb.Memory.Set(ctx, blocks.SetRequest{Key: k, Value: in.Value, Edit: e})
	})
}
