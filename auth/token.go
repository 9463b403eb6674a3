package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// The form of a token: Prefix, the key ID, "_", the secret.
const (
	// Prefix starts every token, so that a key is recognizable in a
	// config file, a log or a secret scanner.
	Prefix = "am_"
	// idLen is the length of a key ID (6 random bytes in hex).
	idLen = 12
	// secretLen is the length of the secret: 32 random bytes, base64url
	// without padding.
	secretLen = 43
	// TokenLen is the length of a token.
	TokenLen = len(Prefix) + idLen + 1 + secretLen
)

// newToken returns a new token and its key ID, reading 38 bytes of rnd.
func newToken(rnd io.Reader) (token, id string, err error) {
	var b [6 + 32]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return "", "", fmt.Errorf("auth: reading random bytes: %w", err)
	}
	id = hex.EncodeToString(b[:6])
	return Prefix + id + "_" + base64.RawURLEncoding.EncodeToString(b[6:]), id, nil
}

// randReader is the source of key material; tests of this package
// replace it.
var randReader io.Reader = rand.Reader

// ParseToken checks the form of a token and returns its key ID. It does
// not say whether the key exists (see Keys.Verify).
func ParseToken(token string) (id string, err error) {
	bad := &UnauthenticatedError{Reason: ReasonMalformed,
		Message: fmt.Sprintf("the API key is not of the form %s<12 hex>_<43 base64url characters>", Prefix)}
	if len(token) != TokenLen || !strings.HasPrefix(token, Prefix) {
		return "", bad
	}
	id = token[len(Prefix) : len(Prefix)+idLen]
	if ValidateKeyID(id) != nil || token[len(Prefix)+idLen] != '_' {
		return "", bad
	}
	secret := token[len(Prefix)+idLen+1:]
	for i := 0; i < len(secret); i++ {
		if !isBase64URL(secret[i]) {
			return "", bad
		}
	}
	// 43 characters carry 258 bits: the last one holds 4 bits of data
	// and 2 zero bits, so only 16 of the 64 characters can end a real
	// secret. A strict decode refuses the others, so one key has one
	// spelling.
	if _, err := base64.RawURLEncoding.Strict().DecodeString(secret); err != nil {
		return "", bad
	}
	return id, nil
}

func isBase64URL(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// HashToken returns the SHA-256 of a token, as a KeyStore keeps it.
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// ParseAuthorization returns the token of an Authorization header value
// of the Bearer scheme (RFC 6750: the scheme name in any letter case, one
// or more spaces, the token). ok is false for an empty value; a value of
// another scheme or form is an *UnauthenticatedError.
func ParseAuthorization(header string) (token string, ok bool, err error) {
	if header == "" {
		return "", false, nil
	}
	scheme, rest, found := strings.Cut(header, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", true, &UnauthenticatedError{Reason: ReasonMalformed,
			Message: "the Authorization header must be \"Bearer <API key>\""}
	}
	token = strings.TrimLeft(rest, " ")
	if token == "" || strings.ContainsAny(token, " \t") {
		return "", true, &UnauthenticatedError{Reason: ReasonMalformed,
			Message: "the Authorization header must be \"Bearer <API key>\" with one key"}
	}
	return token, true, nil
}
