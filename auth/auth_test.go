package auth

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
)

func TestTokenForm(t *testing.T) {
	token, id, err := newToken(randReader)
	if err != nil {
		t.Fatal(err)
	}
	if len(token) != TokenLen || TokenLen != 59 || !strings.HasPrefix(token, "am_"+id+"_") {
		t.Fatalf("token %q (id %q)", token, id)
	}
	if got, err := ParseToken(token); err != nil || got != id {
		t.Fatalf("ParseToken: %q %v", got, err)
	}
	// Two tokens never repeat.
	other, _, _ := newToken(randReader)
	if other == token {
		t.Fatal("two tokens are equal")
	}
	// A known token from known bytes.
	fixed := bytes.NewReader(append([]byte{0xde, 0xad, 0xbe, 0xef, 0x00, 0x01}, bytes.Repeat([]byte{0xff}, 32)...))
	token, id, _ = newToken(fixed)
	if id != "deadbeef0001" || token != "am_deadbeef0001_"+strings.Repeat("_", 42)+"8" {
		t.Errorf("token from fixed bytes: %q", token)
	}
	for _, bad := range []string{
		"",
		token[:len(token)-1],
		token + "A",
		"xx" + token[2:],
		"am_DEADBEEF0001" + token[15:],  // upper-case ID
		"am_deadbeef0001-" + token[16:], // wrong separator
		token[:30] + "+" + token[31:],   // not base64url
		token[:len(token)-1] + "x",      // non-zero padding bits: a second spelling
		"am_deadbeef0001_" + strings.Repeat("é", 21) + "A", // bytes, not characters
	} {
		var ue *UnauthenticatedError
		if _, err := ParseToken(bad); !errors.As(err, &ue) || ue.Reason != ReasonMalformed {
			t.Errorf("ParseToken(%q): %v", bad, err)
		}
	}
}

func TestParseAuthorization(t *testing.T) {
	for _, c := range []struct {
		header, token string
		given, ok     bool
	}{
		{"", "", false, true},
		{"Bearer am_x", "am_x", true, true},
		{"bearer   am_x", "am_x", true, true},
		{"BEARER am_x", "am_x", true, true},
		{"Basic dXNlcjpwYXNz", "", true, false},
		{"Bearer", "", true, false},
		{"Bearer ", "", true, false},
		{"Bearer a b", "", true, false},
		{"Bearer a\tb", "", true, false},
		{"Beareram_x", "", true, false},
	} {
		token, given, err := ParseAuthorization(c.header)
		if token != c.token || given != c.given || (err == nil) != c.ok {
			t.Errorf("%q: %q %v %v", c.header, token, given, err)
		}
		if err != nil && !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%q: %v is not ErrUnauthenticated", c.header, err)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, ok := range []string{"acme", "a", "team-1.prod:eu_west", strings.Repeat("x", 64)} {
		if err := ValidateTenant(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-acme", "a b", "a/b", "..", strings.Repeat("x", 65), "é"} {
		if err := ValidateTenant(bad); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if err := ValidateName(strings.Repeat("é", 101)); err == nil {
		t.Error("a 202-byte name is valid")
	}
	if err := ValidateName("Alice's laptop ✓"); err != nil {
		t.Error(err)
	}
}

// clock is a manual clock.
type clock struct{ now atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.now.Store(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *clock) Now() time.Time          { return time.Unix(0, c.now.Load()).UTC() }
func (c *clock) Advance(d time.Duration) { c.now.Add(int64(d)) }

// countingStore counts the lookups, Any calls and touches that reach the
// store.
type countingStore struct {
	*MemStore
	lookups, anys, touches atomic.Int64
}

func (c *countingStore) Lookup(ctx context.Context, id string) (*Record, error) {
	c.lookups.Add(1)
	return c.MemStore.Lookup(ctx, id)
}
func (c *countingStore) Any(ctx context.Context) (bool, error) {
	c.anys.Add(1)
	return c.MemStore.Any(ctx)
}
func (c *countingStore) Touch(ctx context.Context, id string, at time.Time) error {
	c.touches.Add(1)
	return c.MemStore.Touch(ctx, id, at)
}

// newReq returns a request to host from remote, with an Authorization
// header if authz is not empty.
func newReq(host, remote, authz string) *http.Request {
	r := httptest.NewRequest("GET", "/v1/sessions", nil)
	r.Host, r.RemoteAddr = host, remote
	if authz != "" {
		r.Header.Set("Authorization", authz)
	}
	return r
}

// reason returns the reason of an *UnauthenticatedError, or the error.
func reason(err error) string {
	var ue *UnauthenticatedError
	if errors.As(err, &ue) {
		return ue.Reason
	}
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// TestAnonymousRules checks when a request without a key is the default
// tenant: only with keys not required, on loopback, while the store holds
// no key.
func TestAnonymousRules(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	cs := &countingStore{MemStore: NewMemStore()}
	keys := NewKeys(cs, KeysOptions{Clock: clk.Now})
	a := NewAuthenticator(keys, AuthenticatorOptions{Clock: clk.Now})

	for _, c := range []struct{ host, remote, want string }{
		{"localhost:8080", "127.0.0.1:5000", "ok"},
		{"127.0.0.1:8080", "127.0.0.1:5000", "ok"},
		{"[::1]:8080", "[::1]:5000", "ok"},
		{"LOCALHOST", "127.0.0.2:5000", "ok"},
		{"app.localhost:8080", "127.0.0.1:5000", "ok"},
		// A page that rebinds its own name to 127.0.0.1 keeps its Host.
		{"evil.example:8080", "127.0.0.1:5000", ReasonMissing},
		{"localhost:8080", "192.0.2.7:5000", ReasonMissing},
		{"10.0.0.1:8080", "10.0.0.2:5000", ReasonMissing},
	} {
		id, err := a.Authenticate(newReq(c.host, c.remote, ""))
		if reason(err) != c.want || err == nil && (id.Tenant != "" || !id.Anonymous()) {
			t.Errorf("%s from %s: %+v %v, want %s", c.host, c.remote, id, err, c.want)
		}
	}
	// "No key" is believed for CacheTTL, not asked every request.
	if n := cs.anys.Load(); n != 1 {
		t.Errorf("%d Any calls", n)
	}

	// Creating a key (here, as another process would) turns enforcement
	// on within CacheTTL; the new key works at once.
	token, key, err := keys.Create(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	if id, err := a.Authenticate(newReq("localhost", "127.0.0.1:1", "Bearer "+token)); err != nil || id.Tenant != "acme" || id.KeyID != key.ID {
		t.Fatalf("the new key: %+v %v", id, err)
	}
	// Verifying a key told the authenticator keys exist: no wait.
	if _, err := a.Authenticate(newReq("localhost", "127.0.0.1:1", "")); reason(err) != ReasonMissing {
		t.Errorf("anonymous after a key was verified: %v", err)
	}
	// Another authenticator (another server) learns it within CacheTTL.
	b := NewAuthenticator(keys, AuthenticatorOptions{Clock: clk.Now})
	if _, err := b.Authenticate(newReq("localhost", "127.0.0.1:1", "")); reason(err) != ReasonMissing {
		t.Errorf("anonymous on a fresh authenticator with a key in the store: %v", err)
	}
	// Revoking the only key does not turn enforcement off.
	if _, err := keys.Revoke(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	c := NewAuthenticator(keys, AuthenticatorOptions{Clock: clk.Now})
	if _, err := c.Authenticate(newReq("localhost", "127.0.0.1:1", "")); reason(err) != ReasonMissing {
		t.Errorf("anonymous with only a revoked key: %v", err)
	}

	// Require: a key always, even on an empty store and loopback.
	r := NewAuthenticator(NewKeys(NewMemStore(), KeysOptions{}), AuthenticatorOptions{Require: true})
	if _, err := r.Authenticate(newReq("localhost", "127.0.0.1:1", "")); reason(err) != ReasonMissing {
		t.Errorf("Require: %v", err)
	}
}

func TestAuthenticateKeys(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	cs := &countingStore{MemStore: NewMemStore()}
	keys := NewKeys(cs, KeysOptions{Clock: clk.Now})
	a := NewAuthenticator(keys, AuthenticatorOptions{Require: true, Clock: clk.Now})
	token, key, err := keys.Create(ctx, "acme", "ci")
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := keys.Create(ctx, "globex", "")
	// From anywhere, with any Host: a key is a key.
	for i := range 3 {
		id, err := a.Authenticate(newReq("agentmem.example:443", "203.0.113.9:4000", "Bearer "+token))
		if err != nil || id.Tenant != "acme" || id.KeyID != key.ID || id.Anonymous() {
			t.Fatalf("request %d: %+v %v", i, id, err)
		}
	}
	if id, err := a.AuthenticateToken(ctx, other); err != nil || id.Tenant != "globex" {
		t.Fatalf("globex: %+v %v", id, err)
	}
	// Verified once, then cached for CacheTTL.
	if n := cs.lookups.Load(); n != 2 {
		t.Errorf("%d lookups for 4 requests with 2 keys", n)
	}
	// LastUsedAt is written once per TouchEvery.
	got, _ := cs.Lookup(ctx, key.ID)
	if !got.LastUsedAt.Equal(clk.Now()) {
		t.Errorf("last used %v, want %v", got.LastUsedAt, clk.Now())
	}
	touches := cs.touches.Load()
	clk.Advance(30 * time.Second)
	a.Authenticate(newReq("h", "r", "Bearer "+token))
	if cs.touches.Load() != touches {
		t.Error("touched again within TouchEvery")
	}
	clk.Advance(31 * time.Second)
	a.Authenticate(newReq("h", "r", "Bearer "+token))
	if cs.touches.Load() != touches+1 {
		t.Error("not touched after TouchEvery")
	}

	// Wrong secret, unknown ID, wrong scheme, malformed key.
	bad := []byte(token)
	if bad[20] == 'A' { // still base64url, a different secret
		bad[20] = 'B'
	} else {
		bad[20] = 'A'
	}
	unknown := "am_000000000000_" + token[16:]
	for header, want := range map[string]string{
		"Bearer " + string(bad): ReasonInvalid,
		"Bearer " + unknown:     ReasonInvalid,
		"Basic " + token:        ReasonMalformed,
		"Bearer sk-not-ours":    ReasonMalformed,
		"Bearer " + token + "x": ReasonMalformed,
	} {
		if _, err := a.Authenticate(newReq("h", "r", header)); reason(err) != want {
			t.Errorf("%.40s...: %v, want %s", header, err, want)
		}
	}

	// Revocation (by another process: the store only) takes effect once
	// the cached verification is older than CacheTTL.
	if _, err := keys.Revoke(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(newReq("h", "r", "Bearer "+token)); err != nil {
		t.Errorf("within CacheTTL of the last check: %v", err)
	}
	clk.Advance(DefaultCacheTTL)
	if _, err := a.Authenticate(newReq("h", "r", "Bearer "+token)); reason(err) != ReasonRevoked {
		t.Errorf("revoked: %v", err)
	}
	// No cache: revocation is seen at once.
	nc := NewAuthenticator(keys, AuthenticatorOptions{Require: true, CacheTTL: -1, Clock: clk.Now})
	if _, err := nc.AuthenticateToken(ctx, other); err != nil {
		t.Fatal(err)
	}
	list, _ := keys.List(ctx, "globex")
	keys.Revoke(ctx, list[0].ID)
	if _, err := nc.AuthenticateToken(ctx, other); reason(err) != ReasonRevoked {
		t.Errorf("no cache, revoked: %v", err)
	}

	// A store failure is not a 401.
	cs.Close()
	clk.Advance(time.Hour)
	if _, err := a.AuthenticateToken(ctx, token); err == nil || errors.Is(err, ErrUnauthenticated) {
		t.Errorf("store closed: %v", err)
	}
}

func TestContext(t *testing.T) {
	ctx := context.Background()
	if _, ok := FromContext(ctx); ok || TenantFrom(ctx) != "" {
		t.Error("an empty context has an identity")
	}
	ctx = NewContext(ctx, Identity{Tenant: "acme", KeyID: "0123456789ab"})
	if id, ok := FromContext(ctx); !ok || id.KeyID != "0123456789ab" || TenantFrom(ctx) != "acme" {
		t.Errorf("%+v %v", id, ok)
	}
}

func TestKeysInput(t *testing.T) {
	ctx := context.Background()
	k := NewKeys(NewMemStore(), KeysOptions{})
	if _, _, err := k.Create(ctx, "", "x"); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("empty tenant: %v", err)
	}
	for _, name := range []string{"a\nb", "a\x00b", "\x1b[31mred"} {
		if _, _, err := k.Create(ctx, "acme", name); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("name %q: %v", name, err)
		}
	}
	if _, err := k.Revoke(ctx, "nope"); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("revoke a bad ID: %v", err)
	}
	if _, err := k.Revoke(ctx, "0123456789ab"); !errors.Is(err, agentmem.ErrNotFound) {
		t.Errorf("revoke a missing key: %v", err)
	}
	if _, err := k.List(ctx, "a b"); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("list a bad tenant: %v", err)
	}
	if _, err := Open(ctx, "ftp://x"); err == nil || !strings.Contains(err.Error(), "mem") {
		t.Errorf("unknown scheme: %v", err)
	}
	ks, err := Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	ks.Close()
}

// BenchmarkAuthenticate measures what a key costs a request: a cached
// verification (the common case) and a full one (every CacheTTL).
func BenchmarkAuthenticate(b *testing.B) {
	keys := NewKeys(NewMemStore(), KeysOptions{})
	token, _, err := keys.Create(context.Background(), "acme", "")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ttl  time.Duration
	}{{"cached", time.Hour}, {"uncached", -1}} {
		b.Run(c.name, func(b *testing.B) {
			a := NewAuthenticator(keys, AuthenticatorOptions{Require: true, CacheTTL: c.ttl})
			r := newReq("localhost", "127.0.0.1:1", "Bearer "+token)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Authenticate(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
