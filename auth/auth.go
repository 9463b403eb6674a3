package auth

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
)

// Limits of the names a key carries.
const (
	// MaxTenantLen bounds a tenant name.
	MaxTenantLen = 64
	// MaxNameBytes bounds a key's name.
	MaxNameBytes = 200
)

// ErrUnauthenticated is wrapped by the errors of a request or a token that
// does not authenticate. That is no key where one is required, a malformed
// key, or an unknown or revoked one. The server answers them with 401.
var ErrUnauthenticated = errors.New("unauthenticated")

// UnauthenticatedError says why a request was not authenticated.
type UnauthenticatedError struct {
	// Reason is one of the Reason* constants.
	Reason string
	// Message says what to do, for people.
	Message string
}

// Reasons of an UnauthenticatedError.
const (
	// ReasonMissing: no key was sent and one is required.
	ReasonMissing = "missing"
	// ReasonMalformed: the Authorization header or the key is not of
	// the expected form.
	ReasonMalformed = "malformed"
	// ReasonInvalid: no such key, or the secret does not match.
	ReasonInvalid = "invalid"
	// ReasonRevoked: the key was revoked.
	ReasonRevoked = "revoked"
)

func (e *UnauthenticatedError) Error() string { return "auth: " + e.Message }

// Unwrap makes errors.Is(err, ErrUnauthenticated) hold.
func (e *UnauthenticatedError) Unwrap() error { return ErrUnauthenticated }

// Key is what is known about an API key, without its secret.
type Key struct {
	// ID is the public key ID, 12 lowercase hex characters; it is the
	// token's second part.
	ID string `json:"id"`
	// Tenant is the tenant whose data the key reaches.
	Tenant string `json:"tenant"`
	// Name is a note for people ("ci", "alice's laptop"); it may be empty.
	Name string `json:"name,omitempty"`
	// CreatedAt is when the key was created.
	CreatedAt time.Time `json:"created_at"`
	// LastUsedAt is when the key last authenticated a request (zero:
	// never). It is updated at most once a minute per server.
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
	// RevokedAt is when the key was revoked (zero: it is not).
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// Revoked reports whether the key was revoked.
func (k *Key) Revoked() bool { return !k.RevokedAt.IsZero() }

// Record is a key as a KeyStore keeps it: the Key and the SHA-256 of its
// token. The token itself is never stored.
type Record struct {
	Key
	// Hash is sha256(token), HashLen bytes.
	Hash []byte
}

// HashLen is the length of Record.Hash.
const HashLen = 32

// KeyStore is a database of API keys. Implementations are safe for
// concurrent use and, for the database backends, by many processes.
// Errors wrap the agentmem sentinels: ErrNotFound for a missing key,
// ErrConflict for an ID in use, ErrInvalid for bad input (which changes
// nothing). Times are kept to the microsecond, in UTC.
type KeyStore interface {
	// Insert stores a new key. An ID in use is ErrConflict.
	Insert(ctx context.Context, rec *Record) error
	// Lookup returns the key with the given ID, revoked or not.
	Lookup(ctx context.Context, id string) (*Record, error)
	// List returns the keys of a tenant, or of every tenant for "",
	// revoked ones included, oldest first (then by ID).
	List(ctx context.Context, tenant string) ([]*Key, error)
	// Revoke marks a key revoked at the given time and returns it. A key
	// revoked already keeps its first revocation time.
	Revoke(ctx context.Context, id string, at time.Time) (*Key, error)
	// Touch records that a key was used at the given time; an earlier
	// time than the one recorded changes nothing.
	Touch(ctx context.Context, id string, at time.Time) error
	// Any reports whether the store holds any key, revoked ones
	// included.
	Any(ctx context.Context) (bool, error)
	// Close releases the store's resources.
	Close() error
}

// tenantPattern is the form of a tenant name: the form of a session ID,
// shorter.
var tenantPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)

// keyIDPattern is the form of a key ID.
var keyIDPattern = regexp.MustCompile(`^[0-9a-f]{12}$`)

// ValidateTenant checks a tenant name: 1 to 64 characters from
// [A-Za-z0-9._:-], the first a letter or digit. The default tenant ""
// of unauthenticated requests cannot have keys.
func ValidateTenant(tenant string) error {
	if !tenantPattern.MatchString(tenant) {
		if tenant == "" {
			return &agentmem.InvalidError{Field: "tenant", Reason: "is required"}
		}
		return &agentmem.InvalidError{Field: "tenant", Reason: fmt.Sprintf("%.80q is not a valid tenant name (1-%d characters from [A-Za-z0-9._:-], starting with a letter or digit)", tenant, MaxTenantLen)}
	}
	return nil
}

// ValidateName checks a key's name: at most 200 bytes of UTF-8 without
// control characters; it may be empty.
func ValidateName(name string) error {
	if len(name) > MaxNameBytes {
		return &agentmem.InvalidError{Field: "name", Reason: fmt.Sprintf("is %d bytes long (at most %d)", len(name), MaxNameBytes)}
	}
	if !utf8.ValidString(name) {
		return &agentmem.InvalidError{Field: "name", Reason: "is not valid UTF-8"}
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return &agentmem.InvalidError{Field: "name", Reason: "has a control character"}
		}
	}
	return nil
}

// ValidateKeyID checks a key ID: 12 lowercase hex characters.
func ValidateKeyID(id string) error {
	if !keyIDPattern.MatchString(id) {
		return &agentmem.InvalidError{Field: "id", Reason: fmt.Sprintf("%.40q is not a key ID (12 lowercase hex characters)", id)}
	}
	return nil
}

// ValidateRecord checks a record before a KeyStore inserts it. Backends
// call it first.
func ValidateRecord(rec *Record) error {
	if rec == nil {
		return &agentmem.InvalidError{Field: "record", Reason: "is nil"}
	}
	if err := ValidateKeyID(rec.ID); err != nil {
		return err
	}
	if err := ValidateTenant(rec.Tenant); err != nil {
		return err
	}
	if err := ValidateName(rec.Name); err != nil {
		return err
	}
	if len(rec.Hash) != HashLen {
		return &agentmem.InvalidError{Field: "hash", Reason: fmt.Sprintf("is %d bytes, want %d", len(rec.Hash), HashLen)}
	}
	if rec.CreatedAt.IsZero() {
		return &agentmem.InvalidError{Field: "created_at", Reason: "is required"}
	}
	return nil
}

// NotFound returns the error of a missing key, for backends.
func NotFound(id string) error {
	return fmt.Errorf("auth: key %q: %w", id, agentmem.ErrNotFound)
}

// Conflict returns the error of a key ID in use, for backends.
func Conflict(id string) error {
	return fmt.Errorf("auth: key %q already exists: %w", id, agentmem.ErrConflict)
}

// Normalize returns t as the backends keep it: UTC, to the microsecond.
func Normalize(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}
