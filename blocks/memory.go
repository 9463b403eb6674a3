package blocks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentmem/agentmem"
)

// DefaultRetries is how many times an edit without Edit.IfVersion is
// tried again when another writer changed the block between its read and
// its write, when Options.Retries is 0.
const DefaultRetries = 8

// Options configures a Memory. The zero value is a good default.
type Options struct {
	// Clock gives the time of changes; nil means time.Now.
	Clock func() time.Time
	// Retries is as DefaultRetries; negative means none.
	Retries int
}

// Memory is the editing of blocks over a Store. Every edit reads the
// block, computes its new value and checks it against the limit. It
// writes the block only if it is still at the version read (Store.Put),
// and tries again when another writer got in first. It is safe for concurrent use.
type Memory struct {
	st      Store
	clock   func() time.Time
	retries int
}

// New returns a Memory over st.
func New(st Store, opts Options) *Memory {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	switch {
	case opts.Retries == 0:
		opts.Retries = DefaultRetries
	case opts.Retries < 0:
		opts.Retries = 0
	}
	return &Memory{st: st, clock: opts.Clock, retries: opts.Retries}
}

// Store returns the Memory's store.
func (m *Memory) Store() Store { return m.st }

// Edit says who makes a change and on what condition.
type Edit struct {
	// By is who changes the block: an agent's name, "api", an operator.
	By string
	// IfVersion, when positive, makes the change apply only to that
	// version of the block: another is a *VersionError, and nothing
	// changes. Zero applies it to whatever version the block has.
	IfVersion int64
	// Agent marks the agent's own edits (its tools): a read-only block
	// refuses them with a *ReadOnlyError.
	Agent bool
}

// SetRequest creates a block or rewrites it.
type SetRequest struct {
	Key
	// Value is the block's new text.
	Value string
	// Limit is the block's size limit in characters; 0 keeps a block's
	// and gives a new one DefaultLimit.
	Limit int
	// Description and ReadOnly, when set, replace the block's; nil keeps
	// them (a new block's are empty and false).
	Description *string
	ReadOnly    *bool
	Edit
}

// now returns the clock's time as the stores keep it: UTC, to the
// microsecond.
func (m *Memory) now() time.Time { return m.clock().UTC().Truncate(time.Microsecond) }

// Get returns a block, or an error wrapping agentmem.ErrNotFound.
func (m *Memory) Get(ctx context.Context, k Key) (Block, error) {
	if err := ValidateKey(k); err != nil {
		return Block{}, err
	}
	return m.st.Get(ctx, k)
}

// List returns the owner's blocks, by label.
func (m *Memory) List(ctx context.Context, tenant string, owner Owner) ([]Block, error) {
	if err := ValidateOwner(tenant, owner); err != nil {
		return nil, err
	}
	return m.st.List(ctx, tenant, owner)
}

// History returns the block's changes, oldest first (the newest
// MaxHistory), or an error wrapping agentmem.ErrNotFound when there is no
// such block.
func (m *Memory) History(ctx context.Context, k Key) ([]Change, error) {
	if err := ValidateKey(k); err != nil {
		return nil, err
	}
	if _, err := m.st.Get(ctx, k); err != nil {
		return nil, err
	}
	return m.st.History(ctx, k)
}

// Set creates the block, or rewrites its value and, when given, its
// limit, description and read-only flag. A value over the limit is a
// *LimitError and nothing changes. A set that changes nothing writes
// nothing and returns the block as it is. With Edit.Agent a read-only
// block refuses it (*ReadOnlyError), as it refuses to be made writable.
func (m *Memory) Set(ctx context.Context, req SetRequest) (Block, error) {
	if err := checkText("value", req.Value); err != nil {
		return Block{}, err
	}
	if req.Limit < 0 || req.Limit > MaxLimit {
		return Block{}, invalid("limit", "%d is not from 1 to %d characters", req.Limit, MaxLimit)
	}
	if req.Description != nil {
		if err := checkField("description", *req.Description, MaxDescriptionBytes, false); err != nil {
			return Block{}, err
		}
	}
	return m.edit(ctx, req.Key, req.Edit, func(cur Block, exists bool) (Block, Action, error) {
		next := cur
		action := ActionSet
		if !exists {
			next = Block{Key: req.Key, Limit: DefaultLimit}
			action = ActionCreated
		}
		next.Value = req.Value
		if req.Limit > 0 {
			next.Limit = req.Limit
		}
		if req.Description != nil {
			next.Description = *req.Description
		}
		if req.ReadOnly != nil {
			next.ReadOnly = *req.ReadOnly
		}
		if n := next.Chars(); n > next.Limit {
			field := "value"
			if req.Limit > 0 && n <= cur.Limit {
				field = "limit"
			}
			return Block{}, "", &LimitError{Field: field, Label: req.Label, Chars: n, Limit: next.Limit}
		}
		if exists && next.Value == cur.Value && next.Limit == cur.Limit && next.Description == cur.Description && next.ReadOnly == cur.ReadOnly {
			return cur, "", nil
		}
		return next, action, nil
	})
}

// Append adds text to the end of the block's value, on a new line when
// the value is not empty. Text that would take the block past its limit
// is a *LimitError and nothing changes.
func (m *Memory) Append(ctx context.Context, k Key, text string, e Edit) (Block, error) {
	if err := checkText("text", text); err != nil {
		return Block{}, err
	}
	if text == "" {
		return Block{}, invalid("text", "is empty: there is nothing to append")
	}
	return m.edit(ctx, k, e, func(cur Block, exists bool) (Block, Action, error) {
		if !exists {
			return Block{}, "", notFound(k)
		}
		next := cur
		if next.Value != "" {
			next.Value += "\n"
		}
		next.Value += text
		if n := next.Chars(); n > next.Limit {
			return Block{}, "", &LimitError{Field: "text", Label: k.Label, Chars: n, Limit: next.Limit}
		}
		return next, ActionAppended, nil
	})
}

// Replace replaces old, which must occur exactly once in the block's
// value, with new (which may be empty, to delete old). Old text that does
// not occur, or occurs more than once, is a *MatchError; a result over
// the limit a *LimitError; nothing changes either way.
func (m *Memory) Replace(ctx context.Context, k Key, old, new string, e Edit) (Block, error) {
	if err := checkText("old", old); err != nil {
		return Block{}, err
	}
	if old == "" {
		return Block{}, invalid("old", "is empty: give the text to replace, exactly as the block has it")
	}
	if err := checkText("new", new); err != nil {
		return Block{}, err
	}
	return m.edit(ctx, k, e, func(cur Block, exists bool) (Block, Action, error) {
		if !exists {
			return Block{}, "", notFound(k)
		}
		if n := strings.Count(cur.Value, old); n != 1 {
			return Block{}, "", &MatchError{Label: k.Label, Count: n}
		}
		if old == new {
			return cur, "", nil
		}
		next := cur
		next.Value = strings.Replace(cur.Value, old, new, 1)
		if n := next.Chars(); n > next.Limit {
			return Block{}, "", &LimitError{Field: "new", Label: k.Label, Chars: n, Limit: next.Limit}
		}
		return next, ActionReplaced, nil
	})
}

// Delete deletes the block and its history. With Edit.Agent a read-only
// block refuses it.
func (m *Memory) Delete(ctx context.Context, k Key, e Edit) error {
	if err := ValidateKey(k); err != nil {
		return err
	}
	for try := 0; ; try++ {
		cur, err := m.st.Get(ctx, k)
		if err != nil {
			return err
		}
		if err := m.allowed(cur, e); err != nil {
			return err
		}
		err = m.st.Delete(ctx, k, cur.Version)
		if !errors.Is(err, ErrStale) {
			return err
		}
		if err := m.stale(ctx, k, e, try); err != nil {
			return err
		}
	}
}

// DeleteOwner deletes every block of the owner (a session's, when the
// session is deleted).
func (m *Memory) DeleteOwner(ctx context.Context, tenant string, owner Owner) error {
	if err := ValidateOwner(tenant, owner); err != nil {
		return err
	}
	return m.st.DeleteOwner(ctx, tenant, owner)
}

// allowed checks an edit's conditions against the block read.
func (m *Memory) allowed(cur Block, e Edit) error {
	if e.IfVersion > 0 && cur.Version != e.IfVersion {
		return &VersionError{Label: cur.Label, Expected: e.IfVersion, Current: cur.Version}
	}
	if e.Agent && cur.ReadOnly {
		return &ReadOnlyError{Label: cur.Label}
	}
	return nil
}

// stale answers a write that found the block at another version than it
// read: with IfVersion, the *VersionError; else nil to try again, or,
// after the last try, an error wrapping agentmem.ErrUnavailable.
func (m *Memory) stale(ctx context.Context, k Key, e Edit, try int) error {
	if e.IfVersion > 0 {
		cur, err := m.st.Get(ctx, k)
		if err != nil && !errors.Is(err, agentmem.ErrNotFound) {
			return err
		}
		return &VersionError{Label: k.Label, Expected: e.IfVersion, Current: cur.Version}
	}
	if try >= m.retries {
		return fmt.Errorf("blocks: block %q: other writers changed it on every one of %d tries; retry later (%w)", k.Label, try+1, agentmem.ErrUnavailable)
	}
	return nil
}

// edit runs the read, compute and compare-and-set write of an edit. fn
// gets the block as read, or a zero Block and exists false when there is
// none. It returns the next block with the action that made it, or an
// empty action when nothing changes.
func (m *Memory) edit(ctx context.Context, k Key, e Edit, fn func(cur Block, exists bool) (Block, Action, error)) (Block, error) {
	if err := ValidateKey(k); err != nil {
		return Block{}, err
	}
	if err := checkField("by", e.By, MaxFieldBytes, false); err != nil {
		return Block{}, err
	}
	for try := 0; ; try++ {
		cur, err := m.st.Get(ctx, k)
		exists := err == nil
		if err != nil && !errors.Is(err, agentmem.ErrNotFound) {
			return Block{}, err
		}
		if exists {
			if err := m.allowed(cur, e); err != nil {
				return Block{}, err
			}
		} else if e.IfVersion > 0 {
			return Block{}, &VersionError{Label: k.Label, Expected: e.IfVersion}
		}
		next, action, err := fn(cur, exists)
		if err != nil {
			return Block{}, err
		}
		if action == "" {
			return cur, nil
		}
		now := m.now()
		next.Key, next.Version, next.UpdatedAt, next.UpdatedBy = k, cur.Version+1, now, e.By
		if !exists {
			next.CreatedAt = now
		}
		err = m.st.Put(ctx, next, Change{Version: next.Version, Action: action, By: e.By, At: now, Before: cur.Value, After: next.Value})
		if err == nil {
			return next, nil
		}
		if !errors.Is(err, ErrStale) {
			return Block{}, err
		}
		if err := m.stale(ctx, k, e, try); err != nil {
			return Block{}, err
		}
	}
}
