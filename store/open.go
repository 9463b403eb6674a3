package store

import (
	"context"
	"net/url"

	"github.com/agentmem/agentmem/internal/registry"
)

// An Opener opens a backend's driver from a URL whose scheme it was
// registered for; Open wraps it in the portable Store.
type Opener func(ctx context.Context, u *url.URL) (Driver, error)

// backends holds the registered openers.
var backends = registry.New[Driver]("store")

// Register makes a backend available to Open under a URL scheme, in the
// style of database/sql drivers: a backend package registers itself in
// its init function, and a program imports it for that side effect:
//
//	import _ "github.com/agentmem/agentmem/store/sqlite"
//
// Schemes are case-insensitive. Register panics if the opener is nil or
// the scheme is empty or already registered.
func Register(scheme string, opener Opener) { backends.Register(scheme, opener) }

// Schemes returns the registered URL schemes, sorted.
func Schemes() []string { return backends.Schemes() }

// Open opens the store a URL names, with the opener registered for its
// scheme: "mem://" (package memstore), "sqlite:///path/to/file.db"
// (package sqlite), "postgres://user@host/db" (package postgres). The
// backend's package must be imported (for its init) for its scheme to be
// known; an unknown scheme is an error that lists the registered ones.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	d, err := backends.Open(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	return New(d), nil
}
