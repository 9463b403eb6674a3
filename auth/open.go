package auth

import (
	"context"
	"net/url"

	"github.com/agentmem/agentmem/internal/registry"
)

// An Opener opens a KeyStore from a URL whose scheme it was registered
// for.
type Opener func(ctx context.Context, u *url.URL) (KeyStore, error)

// backends holds the registered openers.
var backends = registry.New[KeyStore]("auth")

// Register makes a backend available to Open under a URL scheme, as
// store.Register does for session stores. Packages auth/sqlite and
// auth/postgres register themselves in their init functions, and this
// package registers "mem". Register panics if the opener is nil or the
// scheme is empty or already registered.
func Register(scheme string, opener Opener) { backends.Register(scheme, opener) }

func init() {
	Register("mem", func(context.Context, *url.URL) (KeyStore, error) { return NewMemStore(), nil })
}

// Open opens the KeyStore of a store URL: the keys live in the same
// database as the sessions ("sqlite:///path.db", "postgres://..."), and
// "mem://" is a new, empty in-memory store. The backend's package must
// be imported for its scheme to be known.
func Open(ctx context.Context, rawURL string) (KeyStore, error) { return backends.Open(ctx, rawURL) }
