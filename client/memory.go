package client

import (
	"context"
	"net/http"
	"strconv"

	"github.com/agentmem/agentmem/api"
)

// BlockOwner names what memory blocks belong to: a user or a session.
type BlockOwner struct {
	path string
}

// UserBlocks names the memory blocks of a user (/v1/users/{user}/blocks).
func UserBlocks(userID string) BlockOwner { return BlockOwner{path: "/v1/users/" + pathID(userID)} }

// SessionBlocks names the memory blocks of a session
// (/v1/sessions/{id}/blocks).
func SessionBlocks(sessionID string) BlockOwner {
	return BlockOwner{path: "/v1/sessions/" + pathID(sessionID)}
}

// blocksPath returns the path of the owner's blocks, or of one block.
func (o BlockOwner) blocksPath(label string) (string, error) {
	if o.path == "" || o.path == "/v1/users/" || o.path == "/v1/sessions/" {
		return "", invalid("owner", "is empty: use UserBlocks or SessionBlocks with an ID")
	}
	if label == "" {
		return o.path + "/blocks", nil
	}
	return o.path + "/blocks/" + pathID(label), nil
}

// blockPath returns the path of one of the owner's blocks, after checking
// the owner and then the label, which is required.
func (o BlockOwner) blockPath(label string) (string, error) {
	path, err := o.blocksPath(label)
	if err != nil {
		return "", err
	}
	if err := checkID("label", label); err != nil {
		return "", err
	}
	return path, nil
}

// BlockWrite are the options of a block's write.
type BlockWrite struct {
	// IfVersion, when positive, makes the write conditional on the block
	// being at that version (If-Match): another writer's change first is
	// ErrConflict and nothing is written.
	IfVersion int64
}

func (w BlockWrite) header() map[string]string {
	if w.IfVersion <= 0 {
		return nil
	}
	return map[string]string{"If-Match": strconv.FormatInt(w.IfVersion, 10)}
}

// Blocks returns the owner's memory blocks, by label.
func (c *Client) Blocks(ctx context.Context, owner BlockOwner) ([]api.Block, error) {
	path, err := owner.blocksPath("")
	if err != nil {
		return nil, err
	}
	var out api.BlocksResponse
	if _, err := c.call(ctx, request{method: http.MethodGet, path: path, idempotent: true}, &out); err != nil {
		return nil, err
	}
	return out.Blocks, nil
}

// Block returns one of the owner's memory blocks; a missing one is
// ErrNotFound.
func (c *Client) Block(ctx context.Context, owner BlockOwner, label string) (*api.Block, error) {
	return c.blockCall(ctx, owner, label, "", http.MethodGet, nil, BlockWrite{}, true)
}

// PutBlock creates a block or sets its value and settings (PUT). It is
// sent again after a failure that may pass only with w.IfVersion, which
// makes a repeat harmless.
func (c *Client) PutBlock(ctx context.Context, owner BlockOwner, label string, req api.PutBlockRequest, w BlockWrite) (*api.Block, error) {
	if req.Value == nil {
		return nil, invalid("value", "is required (an empty string for an empty block)")
	}
	return c.blockCall(ctx, owner, label, "", http.MethodPut, req, w, w.IfVersion > 0)
}

// AppendBlock adds text to the end of a block, on a new line. A
// read-only block is ErrConflict (409 read_only); text that would pass
// the block's limit is refused, never cut (ErrInvalid).
func (c *Client) AppendBlock(ctx context.Context, owner BlockOwner, label string, req api.AppendBlockRequest, w BlockWrite) (*api.Block, error) {
	return c.blockCall(ctx, owner, label, "/append", http.MethodPost, req, w, w.IfVersion > 0)
}

// ReplaceBlock replaces the one occurrence of req.Old in a block with
// req.New. Old found no time or more than once is refused, and nothing
// changes.
func (c *Client) ReplaceBlock(ctx context.Context, owner BlockOwner, label string, req api.ReplaceBlockRequest, w BlockWrite) (*api.Block, error) {
	return c.blockCall(ctx, owner, label, "/replace", http.MethodPost, req, w, w.IfVersion > 0)
}

// DeleteBlock deletes a block and its history.
func (c *Client) DeleteBlock(ctx context.Context, owner BlockOwner, label string, w BlockWrite) error {
	path, err := owner.blockPath(label)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, request{method: http.MethodDelete, path: path, header: w.header(), idempotent: true})
	return err
}

// BlockHistory returns a block's newest changes (at most
// api.MaxBlockHistory), oldest first, each with the value before and
// after.
func (c *Client) BlockHistory(ctx context.Context, owner BlockOwner, label string) ([]api.BlockChange, error) {
	path, err := owner.blockPath(label)
	if err != nil {
		return nil, err
	}
	var out api.BlockHistoryResponse
	if _, err := c.call(ctx, request{method: http.MethodGet, path: path + "/history", idempotent: true}, &out); err != nil {
		return nil, err
	}
	return out.Changes, nil
}

// blockCall sends a request about one block and decodes the block it
// answers.
func (c *Client) blockCall(ctx context.Context, owner BlockOwner, label, suffix, method string, body any, w BlockWrite, idempotent bool) (*api.Block, error) {
	path, err := owner.blockPath(label)
	if err != nil {
		return nil, err
	}
	return callFor[api.Block](ctx, c, request{method: method, path: path + suffix, body: body, header: w.header(), idempotent: idempotent})
}

// UpdateFact changes a fact in place (PATCH /v1/users/{user}/facts/{fact},
// a JSON merge patch): its text, confidence, metadata or validity; the
// fact's history records the change with p.Reason.
func (c *Client) UpdateFact(ctx context.Context, userID, factID string, p api.FactPatch) (*api.FactView, error) {
	if err := checkID("user", userID); err != nil {
		return nil, err
	}
	if err := checkID("fact", factID); err != nil {
		return nil, err
	}
	return callFor[api.FactView](ctx, c, request{method: http.MethodPatch, path: "/v1/users/" + pathID(userID) + "/facts/" + pathID(factID), body: p})
}

// FactHistory returns a fact's changes, oldest first: who did what, when
// and why, and what it said before and after.
func (c *Client) FactHistory(ctx context.Context, userID, factID string) ([]api.FactChange, error) {
	if err := checkID("user", userID); err != nil {
		return nil, err
	}
	if err := checkID("fact", factID); err != nil {
		return nil, err
	}
	var out api.FactHistoryResponse
	if _, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/users/" + pathID(userID) + "/facts/" + pathID(factID) + "/history", idempotent: true}, &out); err != nil {
		return nil, err
	}
	return out.Changes, nil
}

// ForgetUser erases, in the client's tenant, everything about a user
// (DELETE /v1/users/{user}): the user's sessions with their logs, facts
// with their history, memory blocks and recall documents. It is
// idempotent: a retry erases what a failed call left, and counts only
// that. reason is recorded; empty: the server's default.
func (c *Client) ForgetUser(ctx context.Context, userID, reason string) (*api.ForgetUserResponse, error) {
	if err := checkID("user", userID); err != nil {
		return nil, err
	}
	req := request{method: http.MethodDelete, path: "/v1/users/" + pathID(userID), idempotent: true}
	if reason != "" {
		req.query = map[string][]string{"reason": {reason}}
	}
	return callFor[api.ForgetUserResponse](ctx, c, req)
}
