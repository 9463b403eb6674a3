package blocks

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/registry"
)

// Store is what a backend implements: blocks and their histories, with a
// compare-and-set write. Every edit (append, replace, rewrite) is then
// written once, in Memory: read, compute, then write if the block is
// still at the version read. Implementations must be safe for concurrent
// use, and Put and Delete must be atomic across every process that shares
// the database. The conformance suite in package blockstest checks all of
// this.
type Store interface {
	// Get returns the block with the key, or an error wrapping
	// agentmem.ErrNotFound (NotFound).
	Get(ctx context.Context, k Key) (Block, error)
	// List returns the owner's blocks, ordered by label (SortBlocks). An
	// owner without blocks has none: not an error.
	List(ctx context.Context, tenant string, owner Owner) ([]Block, error)
	// Put writes b if the stored block is at version b.Version-1 (1: if
	// there is no block with b's key). In the same transaction it appends
	// c, which CheckPut has passed, to the block's history, and drops all
	// but its newest MaxHistory changes. When the stored
	// version is another, nothing is written and the error is ErrStale.
	Put(ctx context.Context, b Block, c Change) error
	// Delete deletes the block with the key and its history if the block
	// is at version; ErrStale if it is at another, an error wrapping
	// agentmem.ErrNotFound if there is none.
	Delete(ctx context.Context, k Key, version int64) error
	// DeleteOwner deletes every block of the owner, with their histories
	// (a session's, when the session is deleted).
	DeleteOwner(ctx context.Context, tenant string, owner Owner) error
	// History returns the block's changes, oldest first: at most
	// MaxHistory, the newest. A block that does not exist has none: not
	// an error.
	History(ctx context.Context, k Key) ([]Change, error)
	// Close releases the backend; later calls fail with ErrClosed.
	Close() error
}

// Lister is implemented by stores that can say whose blocks they hold:
// what an export of a whole tenant, or of every tenant, walks. Every
// backend of this module implements it.
type Lister interface {
	// Tenants returns the tenants with blocks, sorted bytewise.
	Tenants(ctx context.Context) ([]string, error)
	// Owners returns the owners of the tenant's blocks, each once,
	// ordered by kind then ID, bytewise (SortOwners).
	Owners(ctx context.Context, tenant string) ([]Owner, error)
}

// Importer is implemented by stores that can recreate a block as another
// store held it, which an import needs: Put writes the version after the
// stored one, and appends one change. Every backend of this module
// implements it.
type Importer interface {
	// ImportBlock creates b, every field as given (its version and
	// times too), with history as its history, in one transaction. It
	// calls CheckImport first. A block with b's key is an error wrapping
	// agentmem.ErrConflict (ConflictError). On error nothing is written.
	ImportBlock(ctx context.Context, b Block, history []Change) error
}

// CheckImport checks what Importer.ImportBlock is given: a valid block
// (ValidateBlock) and a history that a Store could have kept for it. The
// history has at most MaxHistory changes, one per version, the newest at
// the block's version with the block's value after it. Each change has a
// known action, a time and a valid "by". An empty history is accepted. Errors are
// *agentmem.InvalidError.
func CheckImport(b Block, history []Change) error {
	if err := ValidateBlock(b); err != nil {
		return err
	}
	if len(history) > MaxHistory {
		return invalid("history", "has %d changes (a block keeps at most %d)", len(history), MaxHistory)
	}
	first := b.Version - int64(len(history)) + 1
	if first < 1 {
		return invalid("history", "has %d changes, more than the block's version %d", len(history), b.Version)
	}
	for i, c := range history {
		field := fmt.Sprintf("history[%d]", i)
		if c.Version != first+int64(i) {
			return invalid(field+".version", "%d, want %d: a history is one change per version, up to the block's %d", c.Version, first+int64(i), b.Version)
		}
		switch c.Action {
		case ActionCreated, ActionSet, ActionAppended, ActionReplaced:
		default:
			return invalid(field+".action", "unknown action %.40q", c.Action)
		}
		if c.At.IsZero() {
			return invalid(field+".at", "is required")
		}
		if err := checkField(field+".by", c.By, MaxFieldBytes, false); err != nil {
			return err
		}
		if err := checkText(field+".before", c.Before); err != nil {
			return err
		}
		if err := checkText(field+".after", c.After); err != nil {
			return err
		}
	}
	if n := len(history); n > 0 && history[n-1].After != b.Value {
		return invalid(fmt.Sprintf("history[%d].after", n-1), "is not the block's value: the newest change makes the block's version")
	}
	return nil
}

// ConflictError returns the error of an import of a block whose key is
// taken: it wraps agentmem.ErrConflict, and every backend returns it as
// this function makes it.
func ConflictError(k Key) error {
	return fmt.Errorf("blocks: %s has a block %.80q already: %w", k.Owner, k.Label, agentmem.ErrConflict)
}

// SortOwners orders owners as Lister.Owners returns them: by kind, then
// ID.
func SortOwners(os []Owner) {
	slices.SortFunc(os, func(a, b Owner) int {
		if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// SortBlocks orders blocks as Store.List returns them: by label.
func SortBlocks(bs []Block) {
	slices.SortFunc(bs, func(a, b Block) int { return strings.Compare(a.Label, b.Label) })
}

// An Opener opens a Store from a URL whose scheme it was registered for.
type Opener func(ctx context.Context, u *url.URL) (Store, error)

// backends holds the registered openers.
var backends = registry.New[Store]("blocks")

// Register makes a backend available to Open under a URL scheme, as
// database/sql drivers do: a backend package registers itself in its init
// function and a program imports it for that side effect:
//
//	import _ "github.com/agentmem/agentmem/blocks/sqlite"
//
// Schemes are case-insensitive. Register panics if the opener is nil, the
// scheme empty or already registered.
func Register(scheme string, opener Opener) { backends.Register(scheme, opener) }

// Schemes returns the registered URL schemes, sorted.
func Schemes() []string { return backends.Schemes() }

// Open opens the Store a URL names: "mem://" (in this package),
// "sqlite:///path/to/agentmem.db" (package blocks/sqlite, which can share
// the session store's file) or "postgres://user@host/db?schema=s"
// (package blocks/postgres). The backend's package must be imported for
// its scheme to be known.
func Open(ctx context.Context, rawURL string) (Store, error) { return backends.Open(ctx, rawURL) }
