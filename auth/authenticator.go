package auth

import (
	"context"
	"crypto/sha256"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Identity is who sent a request.
type Identity struct {
	// Tenant is the tenant whose data the request may reach; "" is the
	// default tenant of anonymous requests.
	Tenant string
	// KeyID is the ID of the key that authenticated the request; empty
	// for an anonymous request.
	KeyID string
}

// Anonymous reports whether no key authenticated the request.
func (id Identity) Anonymous() bool { return id.KeyID == "" }

type ctxKey struct{}

// NewContext returns ctx carrying id.
func NewContext(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the identity NewContext put in ctx.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(ctxKey{}).(Identity)
	return id, ok
}

// TenantFrom returns the tenant of the identity in ctx: the one every
// handler must confine the request to. A context without an identity is
// the default tenant "".
func TenantFrom(ctx context.Context) string {
	id, _ := FromContext(ctx)
	return id.Tenant
}

// Defaults of AuthenticatorOptions.
const (
	DefaultCacheTTL   = 2 * time.Second
	DefaultTouchEvery = time.Minute
	// maxCached bounds the verified keys kept in memory.
	maxCached = 10_000
)

// AuthenticatorOptions configures NewAuthenticator. The zero value is a
// good default for a loopback server.
type AuthenticatorOptions struct {
	// Require makes a key required on every request, even while the
	// store holds no key. Set it when the server listens on a
	// non-loopback address.
	Require bool
	// CacheTTL is how long a verified key is trusted without asking the
	// store again, and how long "the store holds no key" is believed. A key
	// revoked or a first key created by another process takes effect within
	// it. 0 means DefaultCacheTTL; negative, no cache.
	CacheTTL time.Duration
	// TouchEvery is how often a key's LastUsedAt is written while it is
	// in use. 0 means DefaultTouchEvery.
	TouchEvery time.Duration
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
}

// Authenticator decides who sends a request: see the package doc for the
// rules. It is safe for concurrent use.
type Authenticator struct {
	keys *Keys
	opts AuthenticatorOptions

	mu        sync.Mutex
	cache     map[[sha256.Size]byte]cachedKey
	touched   map[string]time.Time
	anyKeys   bool      // sticky: a key store never becomes empty again
	anyAsked  time.Time // when the store last said it had no key
	anyIsSure bool      // anyAsked is set
}

// cachedKey is a verified key and when it was verified.
type cachedKey struct {
	key Key
	at  time.Time
}

// NewAuthenticator returns an Authenticator that verifies keys with keys.
func NewAuthenticator(keys *Keys, opts AuthenticatorOptions) *Authenticator {
	if opts.CacheTTL == 0 {
		opts.CacheTTL = DefaultCacheTTL
	}
	if opts.TouchEvery <= 0 {
		opts.TouchEvery = DefaultTouchEvery
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &Authenticator{keys: keys, opts: opts, cache: map[[sha256.Size]byte]cachedKey{}, touched: map[string]time.Time{}}
}

// Required reports whether requests need a key now: Require is set, or
// the store holds a key.
func (a *Authenticator) Required(ctx context.Context) (bool, error) {
	if a.opts.Require {
		return true, nil
	}
	now := a.opts.Clock()
	a.mu.Lock()
	if a.anyKeys || (a.anyIsSure && a.opts.CacheTTL > 0 && now.Sub(a.anyAsked) < a.opts.CacheTTL) {
		has := a.anyKeys
		a.mu.Unlock()
		return has, nil
	}
	a.mu.Unlock()
	has, err := a.keys.store.Any(ctx)
	if err != nil {
		return false, err
	}
	a.mu.Lock()
	a.anyKeys = a.anyKeys || has
	a.anyAsked, a.anyIsSure = now, true
	a.mu.Unlock()
	return has, nil
}

// Authenticate returns the identity of a request: the key of its
// "Authorization: Bearer" header. With no such header, it is the default
// tenant if keys are not required and the request is a loopback one: its
// peer and its Host are loopback addresses or localhost. It fails with an
// *UnauthenticatedError, or with the store's error.
func (a *Authenticator) Authenticate(r *http.Request) (Identity, error) {
	token, given, err := ParseAuthorization(r.Header.Get("Authorization"))
	if err != nil {
		return Identity{}, err
	}
	if given {
		return a.AuthenticateToken(r.Context(), token)
	}
	required, err := a.Required(r.Context())
	if err != nil {
		return Identity{}, err
	}
	if required {
		return Identity{}, &UnauthenticatedError{Reason: ReasonMissing,
			Message: "an API key is required: send \"Authorization: Bearer <key>\" (create one with agentmem keys create --tenant T)"}
	}
	if !IsLoopbackHost(r.Host) || !isLoopbackPeer(r.RemoteAddr) {
		return Identity{}, &UnauthenticatedError{Reason: ReasonMissing,
			Message: "an API key is required for a request not addressed to localhost: send \"Authorization: Bearer <key>\""}
	}
	return Identity{}, nil
}

// AuthenticateToken returns the identity of a token.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (Identity, error) {
	id, err := ParseToken(token)
	if err != nil {
		return Identity{}, err
	}
	hash := sha256.Sum256([]byte(token))
	now := a.opts.Clock()
	a.mu.Lock()
	c, ok := a.cache[hash]
	a.mu.Unlock()
	var key Key
	if ok && now.Sub(c.at) < a.opts.CacheTTL && !now.Before(c.at) {
		key = c.key
	} else {
		k, err := a.keys.verify(ctx, id, hash[:])
		if err != nil {
			if ok {
				a.mu.Lock()
				delete(a.cache, hash)
				a.mu.Unlock()
			}
			return Identity{}, err
		}
		key = *k
		if a.opts.CacheTTL > 0 {
			a.remember(hash, key, now)
		}
	}
	a.touch(ctx, key.ID, now)
	return Identity{Tenant: key.Tenant, KeyID: key.ID}, nil
}

// remember caches a verified key, dropping expired entries (or, if none
// has expired, all of them) when the cache is full.
func (a *Authenticator) remember(hash [sha256.Size]byte, key Key, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.anyKeys = true
	if len(a.cache) >= maxCached {
		for h, c := range a.cache {
			if now.Sub(c.at) >= a.opts.CacheTTL {
				delete(a.cache, h)
			}
		}
		if len(a.cache) >= maxCached {
			clear(a.cache)
		}
	}
	a.cache[hash] = cachedKey{key: key, at: now}
}

// touch records the use of a key in the store, at most once per
// TouchEvery. It is best effort: a failure leaves the time unrecorded and
// is tried again on the next use.
func (a *Authenticator) touch(ctx context.Context, id string, now time.Time) {
	a.mu.Lock()
	last, ok := a.touched[id]
	due := !ok || now.Sub(last) >= a.opts.TouchEvery
	if due {
		if len(a.touched) >= maxCached {
			clear(a.touched)
		}
		a.touched[id] = now // claimed: concurrent requests do not touch too
	}
	a.mu.Unlock()
	if !due {
		return
	}
	if err := a.keys.store.Touch(ctx, id, Normalize(now)); err != nil {
		a.mu.Lock()
		if ok {
			a.touched[id] = last
		} else {
			delete(a.touched, id)
		}
		a.mu.Unlock()
	}
}

// IsLoopbackHost reports whether a host, or host:port, is "localhost" (or
// a name under .localhost) or a loopback IP address.
func IsLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "]"), "["), ".")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isLoopbackPeer reports whether a request's RemoteAddr is a loopback
// address.
func isLoopbackPeer(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
