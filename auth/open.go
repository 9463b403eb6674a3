package auth

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// An Opener opens a KeyStore from a URL whose scheme it was registered
// for.
type Opener func(ctx context.Context, u *url.URL) (KeyStore, error)

var (
	openersMu sync.RWMutex
	openers   = map[string]Opener{}
)

// Register makes a backend available to Open under a URL scheme, as
// store.Register does for session stores: packages auth/sqlite and
// auth/postgres register themselves in their init functions, and this
// package registers "mem". Register panics if the opener is nil or the
// scheme is empty or already registered.
func Register(scheme string, opener Opener) {
	scheme = strings.ToLower(scheme)
	if scheme == "" || opener == nil {
		panic("auth: Register needs a scheme and an opener")
	}
	openersMu.Lock()
	defer openersMu.Unlock()
	if _, dup := openers[scheme]; dup {
		panic("auth: Register called twice for scheme " + scheme)
	}
	openers[scheme] = opener
}

func init() {
	Register("mem", func(context.Context, *url.URL) (KeyStore, error) { return NewMemStore(), nil })
}

// Open opens the KeyStore of a store URL: the keys live in the same
// database as the sessions ("sqlite:///path.db", "postgres://..."), and
// "mem://" is a new, empty in-memory store. The backend's package must
// be imported for its scheme to be known.
func Open(ctx context.Context, rawURL string) (KeyStore, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("auth: open: %w", err)
	}
	openersMu.RLock()
	opener := openers[strings.ToLower(u.Scheme)]
	var known []string
	for s := range openers {
		known = append(known, s)
	}
	openersMu.RUnlock()
	if opener == nil {
		slices.Sort(known)
		return nil, fmt.Errorf("auth: open %q: unknown scheme %q (registered: %s; import the backend's package to register it)",
			u.Redacted(), u.Scheme, strings.Join(known, ", "))
	}
	return opener(ctx, u)
}
