package blocks

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
)

// Limits on input. Anything larger is refused with an
// *agentmem.InvalidError, and nothing is written.
const (
	// DefaultLimit is a block's size limit, in characters, when it is
	// created without one.
	DefaultLimit = 5000
	// MaxLimit bounds a block's size limit, in characters.
	MaxLimit = 100_000
	// MaxLabelBytes bounds a label.
	MaxLabelBytes = 64
	// MaxDescriptionBytes bounds a block's description.
	MaxDescriptionBytes = 1024
	// MaxFieldBytes bounds tenants, owner IDs and the "by" of a change.
	MaxFieldBytes = 256
	// MaxHistory is how many changes of a block its history keeps: the
	// newest ones. A change keeps the block's value before and after it,
	// so an unbounded history would grow by two values per edit.
	MaxHistory = 100
)

// OwnerKind says what a block belongs to.
type OwnerKind string

// The owners of blocks: a user (shown in every session of the user) or
// one session.
const (
	OwnerUser    OwnerKind = "user"
	OwnerSession OwnerKind = "session"
)

// Owner is what a block belongs to, in a tenant: a user or a session,
// by ID.
type Owner struct {
	Kind OwnerKind
	ID   string
}

// User returns the owner of a user's blocks.
func User(id string) Owner { return Owner{Kind: OwnerUser, ID: id} }

// Session returns the owner of a session's blocks.
func Session(id string) Owner { return Owner{Kind: OwnerSession, ID: id} }

// String returns "user alice" or "session s1".
func (o Owner) String() string { return string(o.Kind) + " " + o.ID }

// Key names a block: its tenant, its owner and its label, unique
// together.
type Key struct {
	// Tenant isolates blocks: a tenant never sees another's. Empty is the
	// default tenant.
	Tenant string
	Owner  Owner
	// Label names the block within its owner, and in the context
	// (<label>...</label>): a letter, then letters, digits, '_' or '-',
	// at most MaxLabelBytes.
	Label string
}

// Block is a piece of text kept in the context of every model call of its
// owner's sessions, which the agent can edit: a persona, what is known
// about the user, the task's state. Blocks are values: the methods of
// Memory return copies.
type Block struct {
	Key
	// Value is the block's text, at most Limit characters.
	Value string
	// Limit is the most characters (Unicode code points) Value may hold:
	// an edit that would pass it is refused, never cut. Characters, not
	// tokens, so that the limit does not depend on the tokenizer.
	Limit int
	// Description tells the agent what the block is for; it is shown
	// with the tools, not in the context.
	Description string
	// ReadOnly blocks refuse the agent's edits (the tools, and append and
	// replace on every surface); Memory.Set may still write them.
	ReadOnly bool
	// Version counts the block's changes: 1 when created, one more at
	// each change. A write that states the version it read fails if
	// another got in first.
	Version int64
	// CreatedAt is when the block was created, UpdatedAt when it last
	// changed and UpdatedBy who changed it.
	CreatedAt time.Time
	UpdatedAt time.Time
	UpdatedBy string
}

// Chars returns the length of the block's value in characters, the unit
// of its limit.
func (b Block) Chars() int { return utf8.RuneCountInString(b.Value) }

// Action is what a change did.
type Action string

// The actions of a block's history.
const (
	ActionCreated  Action = "created"
	ActionSet      Action = "set"
	ActionAppended Action = "appended"
	ActionReplaced Action = "replaced"
)

// Change is one entry of a block's history: who changed it, when, how,
// and its value before and after.
type Change struct {
	// Version is the block's version after the change.
	Version int64
	Action  Action
	// By is who changed it: an agent's name, "api", an operator.
	By string
	At time.Time
	// Before and After are the block's value before the change (empty
	// when it created the block) and after it.
	Before string
	After  string
}

// Errors of the edits. Each typed error below wraps one of them, and the
// one of package agentmem a transport maps to its answer.
var (
	// ErrOverLimit: the edit would take the block past its limit.
	// Nothing changed.
	ErrOverLimit = errors.New("blocks: over the block's limit")
	// ErrNoMatch: a replace's old text does not occur exactly once in the
	// block. Nothing changed.
	ErrNoMatch = errors.New("blocks: the text to replace does not occur exactly once")
	// ErrReadOnly: the agent may not edit a read-only block.
	ErrReadOnly = errors.New("blocks: the block is read-only")
	// ErrStale is a Store's answer to a write whose expected version is
	// not the stored one (another writer got in first). It wraps
	// agentmem.ErrConflict.
	ErrStale = fmt.Errorf("blocks: the block changed since it was read (%w)", agentmem.ErrConflict)
	// ErrClosed is returned by a Store used after Close. It wraps
	// agentmem.ErrUnavailable.
	ErrClosed = fmt.Errorf("blocks: store is closed (%w)", agentmem.ErrUnavailable)
)

// LimitError reports an edit that would take a block past its limit. It
// wraps ErrOverLimit and agentmem.ErrInvalid.
type LimitError struct {
	// Field is the input that made it too long ("value", "text", "new",
	// "limit").
	Field string
	Label string
	// Chars is the length the value would have had, Limit the block's
	// limit, in characters.
	Chars, Limit int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("blocks: block %q would hold %d characters, more than its limit of %d: nothing changed; shorten it (replace or rewrite it) first", e.Label, e.Chars, e.Limit)
}

// Unwrap returns ErrOverLimit and agentmem.ErrInvalid.
func (e *LimitError) Unwrap() []error { return []error{ErrOverLimit, agentmem.ErrInvalid} }

// MatchError reports a replace whose old text occurs in the block zero
// times or more than once. It wraps ErrNoMatch and agentmem.ErrInvalid.
type MatchError struct {
	Label string
	// Count is how many times the old text occurs.
	Count int
}

func (e *MatchError) Error() string {
	if e.Count == 0 {
		return fmt.Sprintf("blocks: the old text does not occur in block %q: nothing changed; copy it exactly from the block", e.Label)
	}
	return fmt.Sprintf("blocks: the old text occurs %d times in block %q: nothing changed; give more of the surrounding text so that it occurs once", e.Count, e.Label)
}

// Unwrap returns ErrNoMatch and agentmem.ErrInvalid.
func (e *MatchError) Unwrap() []error { return []error{ErrNoMatch, agentmem.ErrInvalid} }

// ReadOnlyError reports an agent's edit of a read-only block. It wraps
// ErrReadOnly and agentmem.ErrConflict.
type ReadOnlyError struct{ Label string }

func (e *ReadOnlyError) Error() string {
	return fmt.Sprintf("blocks: block %q is read-only: it cannot be edited by the agent", e.Label)
}

// Unwrap returns ErrReadOnly and agentmem.ErrConflict.
func (e *ReadOnlyError) Unwrap() []error { return []error{ErrReadOnly, agentmem.ErrConflict} }

// VersionError reports a write that stated the version it read
// (Edit.IfVersion) when the block has another. It wraps
// agentmem.ErrConflict.
type VersionError struct {
	Label string
	// Expected is the version stated, Current the block's (0: the block
	// does not exist).
	Expected, Current int64
}

func (e *VersionError) Error() string {
	if e.Current == 0 {
		return fmt.Sprintf("blocks: block %q does not exist (version %d was expected)", e.Label, e.Expected)
	}
	return fmt.Sprintf("blocks: block %q is at version %d, not %d: it changed since it was read", e.Label, e.Current, e.Expected)
}

// Unwrap returns agentmem.ErrConflict.
func (e *VersionError) Unwrap() error { return agentmem.ErrConflict }

// notFound returns the error of a missing block, which wraps
// agentmem.ErrNotFound.
func notFound(k Key) error {
	return fmt.Errorf("blocks: %s has no block %.80q: %w", k.Owner, k.Label, agentmem.ErrNotFound)
}

// NotFound returns the error of a missing block as every Store returns
// it: it wraps agentmem.ErrNotFound and names the owner and the label.
func NotFound(k Key) error { return notFound(k) }

// invalid returns an *agentmem.InvalidError.
func invalid(field, format string, args ...any) error {
	return &agentmem.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// checkField checks a short text field: valid UTF-8, no NUL (PostgreSQL's
// text cannot hold one), at most max bytes, and non-empty when required.
func checkField(field, v string, max int, required bool) error {
	switch {
	case required && strings.TrimSpace(v) == "":
		return invalid(field, "is required")
	case !utf8.ValidString(v):
		return invalid(field, "is not valid UTF-8")
	case strings.IndexByte(v, 0) >= 0:
		return invalid(field, "contains a NUL byte")
	case len(v) > max:
		return invalid(field, "is %d bytes long (at most %d)", len(v), max)
	}
	return nil
}

// checkText checks text that goes into a block's value: valid UTF-8
// without NUL. Its length is the limit's business.
func checkText(field, v string) error {
	switch {
	case !utf8.ValidString(v):
		return invalid(field, "is not valid UTF-8")
	case strings.IndexByte(v, 0) >= 0:
		return invalid(field, "contains a NUL byte")
	}
	return nil
}

// ValidateLabel checks a label: a letter, then letters, digits, '_' or
// '-', at most MaxLabelBytes in all. Labels are shown in the context as
// tags (<persona>), so they hold nothing that could end one.
func ValidateLabel(label string) error {
	if label == "" {
		return invalid("label", "is required")
	}
	if len(label) > MaxLabelBytes {
		return invalid("label", "is %d bytes long (at most %d)", len(label), MaxLabelBytes)
	}
	for i, r := range label {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if i == 0 && !letter {
			return invalid("label", "%.80q must start with a letter (a-z, A-Z)", label)
		}
		if !letter && !(r >= '0' && r <= '9') && r != '_' && r != '-' {
			return invalid("label", "%.80q may hold only letters, digits, '_' and '-'", label)
		}
	}
	return nil
}

// ValidateOwner checks a tenant (optional) and an owner: a known kind and
// an ID of at most MaxFieldBytes.
func ValidateOwner(tenant string, o Owner) error {
	if err := checkField("tenant", tenant, MaxFieldBytes, false); err != nil {
		return err
	}
	if o.Kind != OwnerUser && o.Kind != OwnerSession {
		return invalid("owner", "kind %.40q is neither %q nor %q", o.Kind, OwnerUser, OwnerSession)
	}
	return checkField(string(o.Kind), o.ID, MaxFieldBytes, true)
}

// ValidateKey checks a block's key.
func ValidateKey(k Key) error {
	if err := ValidateOwner(k.Tenant, k.Owner); err != nil {
		return err
	}
	return ValidateLabel(k.Label)
}

// ValidateBlock checks a block as a Store keeps it: a valid key, a limit
// from 1 to MaxLimit, a value within it, a short description, a positive
// version and set times.
func ValidateBlock(b Block) error {
	if err := ValidateKey(b.Key); err != nil {
		return err
	}
	if b.Limit < 1 || b.Limit > MaxLimit {
		return invalid("limit", "%d is not from 1 to %d characters", b.Limit, MaxLimit)
	}
	if err := checkText("value", b.Value); err != nil {
		return err
	}
	if n := b.Chars(); n > b.Limit {
		return &LimitError{Field: "value", Label: b.Label, Chars: n, Limit: b.Limit}
	}
	if err := checkField("description", b.Description, MaxDescriptionBytes, false); err != nil {
		return err
	}
	if err := checkField("by", b.UpdatedBy, MaxFieldBytes, false); err != nil {
		return err
	}
	if b.Version < 1 {
		return invalid("version", "%d is not positive", b.Version)
	}
	if b.CreatedAt.IsZero() || b.UpdatedAt.IsZero() {
		return invalid("created_at", "the times are required")
	}
	return nil
}

// CheckPut checks what a Store's Put is given: a valid block, and a
// change of it (same version, value after it the block's).
func CheckPut(b Block, c Change) error {
	if err := ValidateBlock(b); err != nil {
		return err
	}
	if c.Version != b.Version || c.After != b.Value {
		return invalid("change", "does not describe the block's version %d", b.Version)
	}
	switch c.Action {
	case ActionCreated, ActionSet, ActionAppended, ActionReplaced:
	default:
		return invalid("change.action", "unknown action %.40q", c.Action)
	}
	if c.At.IsZero() {
		return invalid("change.at", "is required")
	}
	return checkField("by", c.By, MaxFieldBytes, false)
}
