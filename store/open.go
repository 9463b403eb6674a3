package store

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// An Opener opens a store from a URL whose scheme it was registered for.
type Opener func(ctx context.Context, u *url.URL) (Store, error)

var (
	openersMu sync.RWMutex
	openers   = map[string]Opener{}
)

// Register makes a backend available to Open under a URL scheme, in the
// style of database/sql drivers: a backend package registers itself in
// its init function, and a program imports it for that side effect:
//
//	import _ "github.com/agentmem/agentmem/store/sqlite"
//
// Schemes are case-insensitive. Register panics if the opener is nil or
// the scheme is empty or already registered.
func Register(scheme string, opener Opener) {
	scheme = strings.ToLower(scheme)
	if scheme == "" || opener == nil {
		panic("store: Register needs a scheme and an opener")
	}
	openersMu.Lock()
	defer openersMu.Unlock()
	if _, dup := openers[scheme]; dup {
		panic("store: Register called twice for scheme " + scheme)
	}
	openers[scheme] = opener
}

// Schemes returns the registered URL schemes, sorted.
func Schemes() []string {
	openersMu.RLock()
	defer openersMu.RUnlock()
	out := make([]string, 0, len(openers))
	for s := range openers {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Open opens the store a URL names, with the opener registered for its
// scheme: "mem://" (package memstore), "sqlite:///path/to/file.db"
// (package sqlite), "postgres://user@host/db" (package postgres). The
// backend's package must be imported (for its init) for its scheme to be
// known; an unknown scheme is an error that lists the registered ones.
func Open(ctx context.Context, rawURL string) (Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	if u.Scheme == "" {
		return nil, fmt.Errorf("store: open %q: the URL has no scheme (registered: %s)", redact(u), listSchemes())
	}
	openersMu.RLock()
	opener := openers[strings.ToLower(u.Scheme)]
	openersMu.RUnlock()
	if opener == nil {
		return nil, fmt.Errorf("store: open %q: unknown scheme %q (registered: %s; import the backend's package to register it)", redact(u), u.Scheme, listSchemes())
	}
	return opener(ctx, u)
}

func listSchemes() string {
	s := Schemes()
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// redact hides a password in a URL that goes into an error message.
func redact(u *url.URL) string { return u.Redacted() }
