package blocks

import (
	"context"
	"net/url"
	"slices"
	"strings"

	"github.com/agentmem/agentmem/internal/registry"
)

// Store is what a backend implements: blocks and their histories, with a
// compare-and-set write, so that every edit (append, replace, rewrite) is
// written once, in Memory, as read, compute, then write if the block is
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
	// there is no block with b's key), and appends c, which CheckPut has
	// passed, to the block's history, dropping all but its newest
	// MaxHistory changes: all in one transaction. When the stored
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
