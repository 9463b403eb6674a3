package apiconv

import (
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/blocks"
)

// Block returns the wire form of a memory block.
func Block(b blocks.Block) api.Block {
	return api.Block{
		Label: b.Label, Owner: string(b.Owner.Kind), OwnerID: b.Owner.ID, Value: b.Value, Limit: b.Limit, Chars: b.Chars(),
		Description: b.Description, ReadOnly: b.ReadOnly, Version: b.Version, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt, UpdatedBy: b.UpdatedBy,
	}
}

// Blocks returns the wire form of memory blocks; none is an empty list.
func Blocks(bs []blocks.Block) []api.Block {
	out := make([]api.Block, len(bs))
	for i, b := range bs {
		out[i] = Block(b)
	}
	return out
}

// BlockChanges returns the wire form of a block's history; none is an
// empty list.
func BlockChanges(cs []blocks.Change) []api.BlockChange {
	out := make([]api.BlockChange, len(cs))
	for i, c := range cs {
		out[i] = api.BlockChange{Version: c.Version, Action: string(c.Action), By: c.By, At: c.At, Before: c.Before, After: c.After}
	}
	return out
}

// ContextBlocks names the blocks a context shows; nil for none.
func ContextBlocks(bs []blocks.Block) []api.ContextBlock {
	if len(bs) == 0 {
		return nil
	}
	out := make([]api.ContextBlock, len(bs))
	for i, b := range bs {
		out[i] = api.ContextBlock{Label: b.Label, Owner: string(b.Owner.Kind), Version: b.Version}
	}
	return out
}
