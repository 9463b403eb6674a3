package api

import "time"

// Bounds of the blocks routes (package blocks enforces them; the wire
// states them for clients).
const (
	// DefaultBlockLimit is a new block's size limit, in characters, when
	// its PUT gives none.
	DefaultBlockLimit = 5000
	// MaxBlockLimit bounds a block's size limit, in characters.
	MaxBlockLimit = 100_000
	// MaxBlockLabelBytes bounds a label.
	MaxBlockLabelBytes = 64
	// MaxBlockDescriptionBytes bounds a block's description.
	MaxBlockDescriptionBytes = 1024
	// MaxBlockHistory is how many changes a block's history keeps.
	MaxBlockHistory = 100
)

// Block is a memory block: labelled text of a user or a session, shown
// after the system prompt of every context of its sessions, which the
// agent edits.
type Block struct {
	// Label names the block within its owner, and in the context.
	Label string `json:"label"`
	// Owner is "user" or "session"; OwnerID the user's or session's ID.
	Owner   string `json:"owner"`
	OwnerID string `json:"owner_id"`
	Value   string `json:"value"`
	// Limit is the most characters (Unicode code points) Value may hold;
	// Chars is how many it holds.
	Limit int `json:"limit"`
	Chars int `json:"chars"`
	// Description says what the block is for.
	Description string `json:"description,omitempty"`
	// ReadOnly blocks refuse the agent's edits: the memory tools, and
	// append and replace here (409 read_only); PUT may still set them.
	ReadOnly bool `json:"read_only"`
	// Version counts the block's changes (1 when created); it is the
	// ETag, and If-Match takes it.
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// UpdatedBy is who made the last change.
	UpdatedBy string `json:"updated_by,omitempty"`
}

// PutBlockRequest is the body of PUT .../blocks/{label}: a new block, or
// a block's new value and settings.
type PutBlockRequest struct {
	// Value is the block's text (required; "" for an empty block).
	Value *string `json:"value"`
	// Limit is the size limit in characters; absent or 0 keeps a block's,
	// and gives a new one DefaultBlockLimit.
	Limit int `json:"limit,omitempty"`
	// Description and ReadOnly, when present, replace the block's.
	Description *string `json:"description,omitempty"`
	ReadOnly    *bool   `json:"read_only,omitempty"`
	// By is who makes the change, recorded in the history; absent means
	// "api".
	By string `json:"by,omitempty"`
}

// AppendBlockRequest is the body of POST .../blocks/{label}/append: text
// added to the end of the block, on a new line.
type AppendBlockRequest struct {
	Text string `json:"text"`
	By   string `json:"by,omitempty"`
}

// ReplaceBlockRequest is the body of POST .../blocks/{label}/replace: Old
// must occur exactly once in the block, and is replaced with New (which
// may be empty).
type ReplaceBlockRequest struct {
	Old string `json:"old"`
	New string `json:"new"`
	By  string `json:"by,omitempty"`
}

// BlocksResponse is the body of GET .../blocks: the owner's blocks, by
// label.
type BlocksResponse struct {
	Blocks []Block `json:"blocks"`
}

// BlockChange is one entry of a block's history.
type BlockChange struct {
	// Version is the block's version after the change.
	Version int64 `json:"version"`
	// Action is "created", "set", "appended" or "replaced".
	Action string    `json:"action"`
	By     string    `json:"by,omitempty"`
	At     time.Time `json:"at"`
	// Before and After are the block's value before and after the
	// change.
	Before string `json:"before"`
	After  string `json:"after"`
}

// BlockHistoryResponse is the body of GET .../blocks/{label}/history: the
// block's newest changes (at most MaxBlockHistory), oldest first.
type BlockHistoryResponse struct {
	Changes []BlockChange `json:"changes"`
}

// ContextBlock names a block a context shows.
type ContextBlock struct {
	Label   string `json:"label"`
	Owner   string `json:"owner"`
	Version int64  `json:"version"`
}
