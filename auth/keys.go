package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/agentmem/agentmem"
)

// Keys creates, lists, revokes and verifies API keys over a KeyStore.
// It is safe for concurrent use.
type Keys struct {
	store KeyStore
	now   func() time.Time
}

// KeysOptions configures NewKeys. The zero value is a good default.
type KeysOptions struct {
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
}

// NewKeys returns a Keys over st. It does not close st.
func NewKeys(st KeyStore, opts KeysOptions) *Keys {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &Keys{store: st, now: opts.Clock}
}

// Store returns the KeyStore the keys are kept in.
func (k *Keys) Store() KeyStore { return k.store }

// createAttempts bounds the retries of a key ID that collides with one
// in use (48 random bits: a collision is rare, two in a row unheard of).
const createAttempts = 3

// Create creates a key for tenant and returns its token, which is shown
// only now: the store keeps its hash.
func (k *Keys) Create(ctx context.Context, tenant, name string) (token string, key *Key, err error) {
	if err := ValidateTenant(tenant); err != nil {
		return "", nil, err
	}
	if err := ValidateName(name); err != nil {
		return "", nil, err
	}
	for attempt := 1; ; attempt++ {
		token, id, err := newToken(randReader)
		if err != nil {
			return "", nil, err
		}
		rec := &Record{Key: Key{ID: id, Tenant: tenant, Name: name, CreatedAt: Normalize(k.now())}, Hash: HashToken(token)}
		err = k.store.Insert(ctx, rec)
		if err == nil {
			key := rec.Key
			return token, &key, nil
		}
		if !errors.Is(err, agentmem.ErrConflict) || attempt == createAttempts {
			return "", nil, err
		}
	}
}

// List returns the keys of a tenant, or of every tenant for "", oldest
// first.
func (k *Keys) List(ctx context.Context, tenant string) ([]*Key, error) {
	if tenant != "" {
		if err := ValidateTenant(tenant); err != nil {
			return nil, err
		}
	}
	return k.store.List(ctx, tenant)
}

// Revoke revokes a key by ID and returns it. Revoking a revoked key
// changes nothing.
func (k *Keys) Revoke(ctx context.Context, id string) (*Key, error) {
	if err := ValidateKeyID(id); err != nil {
		return nil, err
	}
	return k.store.Revoke(ctx, id, Normalize(k.now()))
}

// Verify returns the key a token stands for, or an *UnauthenticatedError
// if it stands for none. That is a malformed token, an unknown key ID, a
// secret that does not match (the hashes are compared in constant time) or
// a revoked key. Other errors are the store's.
func (k *Keys) Verify(ctx context.Context, token string) (*Key, error) {
	id, err := ParseToken(token)
	if err != nil {
		return nil, err
	}
	return k.verify(ctx, id, HashToken(token))
}

// verify checks a parsed token by its ID and hash.
func (k *Keys) verify(ctx context.Context, id string, hash []byte) (*Key, error) {
	rec, err := k.store.Lookup(ctx, id)
	if errors.Is(err, agentmem.ErrNotFound) {
		return nil, errInvalidKey
	}
	if err != nil {
		return nil, fmt.Errorf("auth: looking up key %s: %w", id, err)
	}
	if subtle.ConstantTimeCompare(rec.Hash, hash) != 1 {
		return nil, errInvalidKey
	}
	if rec.Revoked() {
		return nil, &UnauthenticatedError{Reason: ReasonRevoked, Message: "the API key was revoked"}
	}
	key := rec.Key
	return &key, nil
}

// errInvalidKey answers an unknown key and a wrong secret alike, so a
// caller cannot tell which key IDs exist.
var errInvalidKey = &UnauthenticatedError{Reason: ReasonInvalid, Message: "the API key is not valid"}
