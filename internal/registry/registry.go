// Package registry is the URL-scheme registry behind store.Open,
// recall.Open, facts.Open and auth.Open. Backends register an opener for
// a scheme in their init functions, in the style of database/sql drivers.
// A program then opens any of them from one URL ("sqlite:///path.db",
// "postgres://...", "mem://").
package registry

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Registry maps URL schemes to the openers of one kind of backend. The
// zero value is not usable; create one with New. It is safe for
// concurrent use.
type Registry[T any] struct {
	name    string // the package, for messages: "store", "recall"...
	mu      sync.RWMutex
	openers map[string]func(context.Context, *url.URL) (T, error)
}

// New returns an empty registry whose messages start with name.
func New[T any](name string) *Registry[T] {
	return &Registry[T]{name: name, openers: map[string]func(context.Context, *url.URL) (T, error){}}
}

// Register makes opener available to Open under a scheme. Schemes are
// case-insensitive. Register panics if the opener is nil or the scheme is
// empty or already registered: both are programming errors of a backend
// package.
func (r *Registry[T]) Register(scheme string, opener func(context.Context, *url.URL) (T, error)) {
	scheme = strings.ToLower(scheme)
	if scheme == "" || opener == nil {
		panic(r.name + ": Register needs a scheme and an opener")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.openers[scheme]; dup {
		panic(r.name + ": Register called twice for scheme " + scheme)
	}
	r.openers[scheme] = opener
}

// Schemes returns the registered schemes, sorted.
func (r *Registry[T]) Schemes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.openers))
	for s := range r.openers {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Open parses rawURL and calls the opener registered for its scheme.
// Errors never show a password the URL holds, and an unknown or missing
// scheme lists the registered ones.
func (r *Registry[T]) Open(ctx context.Context, rawURL string) (T, error) {
	var zero T
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse's error quotes the URL, password included.
		return zero, fmt.Errorf("%s: open: the URL does not parse (not shown: it may hold a password)", r.name)
	}
	if u.Scheme == "" {
		return zero, fmt.Errorf("%s: open %q: the URL has no scheme (registered: %s)", r.name, u.Redacted(), r.list())
	}
	r.mu.RLock()
	opener := r.openers[strings.ToLower(u.Scheme)]
	r.mu.RUnlock()
	if opener == nil {
		return zero, fmt.Errorf("%s: open %q: unknown scheme %q (registered: %s; import the backend's package to register it)", r.name, u.Redacted(), u.Scheme, r.list())
	}
	return opener(ctx, u)
}

// list is Schemes for a message.
func (r *Registry[T]) list() string {
	if s := r.Schemes(); len(s) > 0 {
		return strings.Join(s, ", ")
	}
	return "none"
}
