package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
)

// Idempotency keys.
//
// An idempotency key names one request to a session, whatever route or
// tool it came through: the same key means the same request. The caller
// sends, with the key, a fingerprint of what the request asks to store
// (its kind and its normalized content: Fingerprint, StepsFingerprint,
// MessagesFingerprint). The append that stores the request's entries
// records the key and the fingerprint in the same transaction (a
// storekit.KeyRecord). A later request with the key is then decided by the
// fingerprint alone. The same fingerprint is a retry, answered as the first
// request was, storing nothing. Another is refused with an *IDReusedError
// (ErrIDReused) and stores nothing either, however its steps compare with
// the stored ones. Keys are per session, and a branch
// sees the keys of the history it inherits.
//
// Entries stored before keys were recorded have none: a request whose key
// has no record falls back to its step IDs (see AppendRequest), which a
// key derives as KEY/0, KEY/1, ... on every route.

// MaxFingerprintLen bounds Idempotency.Fingerprint, in bytes.
const MaxFingerprintLen = 128

// Idempotency is the idempotency key of an append and the fingerprint of
// the request it names (see AppendRequest.Idempotency).
type Idempotency struct {
	// Key is the key: 1 to MaxIDLen bytes of valid UTF-8 without NUL.
	Key string
	// Fingerprint identifies what the request asks to store: equal
	// fingerprints mean the same request. 1 to MaxFingerprintLen bytes,
	// such as the hex SHA-256 Fingerprint returns.
	Fingerprint string
}

// KeyOnly reports whether req only checks its idempotency key: it has a
// key and nothing to append (see AppendRequest).
func KeyOnly(req AppendRequest) bool {
	return req.Idempotency != nil && len(req.Steps) == 0 && req.Compaction == nil
}

// ValidateIdempotency checks AppendRequest.Idempotency.
func ValidateIdempotency(k *Idempotency) error {
	switch {
	case k.Key == "" || len(k.Key) > MaxIDLen:
		return invalid("idempotency.key", "must be 1 to %d bytes", MaxIDLen)
	case strings.IndexByte(k.Key, 0) >= 0 || !utf8.ValidString(k.Key):
		return invalid("idempotency.key", "must be valid UTF-8 without NUL")
	case k.Fingerprint == "" || len(k.Fingerprint) > MaxFingerprintLen:
		return invalid("idempotency.fingerprint", "must be 1 to %d bytes", MaxFingerprintLen)
	case strings.IndexByte(k.Fingerprint, 0) >= 0 || !utf8.ValidString(k.Fingerprint):
		return invalid("idempotency.fingerprint", "must be valid UTF-8 without NUL")
	}
	return nil
}

// Fingerprint returns the fingerprint of a request of a kind (the route or
// tool it came through, such as "steps" or "messages") whose normalized
// content is parts, in order: the hex SHA-256 of an encoding that tells
// every kind and list of parts apart.
func Fingerprint(kind string, parts ...[]byte) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	write := func(b []byte) {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))])
		h.Write(b)
	}
	write([]byte("agentmem request 1"))
	write([]byte(kind))
	for _, p := range parts {
		write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// StepsFingerprint is the fingerprint of an append of steps and a
// compaction record as given (kind "steps"). A step counts as SameStep
// compares it, without its number and time, which the log and a server's
// clock fill in; the compaction counts as EncodeCompaction encodes it,
// new-step references included.
func StepsFingerprint(steps []agentmem.Step, c *CompactionRecord) (string, error) {
	parts := make([][]byte, 0, 2*len(steps)+2)
	for i, s := range steps {
		if s == nil {
			return "", invalid(fmt.Sprintf("steps[%d]", i), "is nil")
		}
		b, err := EncodeStep(withoutNumberAndTime(s))
		if err != nil {
			return "", err
		}
		parts = append(parts, []byte("step"), b)
	}
	if c != nil {
		b, err := EncodeCompaction(c)
		if err != nil {
			return "", err
		}
		parts = append(parts, []byte("compaction"), b)
	}
	return Fingerprint("steps", parts...), nil
}

// MessagesFingerprint is the fingerprint of an append of chat messages
// (kind "messages", AppendMessages): each message's JSON encoding without
// its time, which a server's clock fills in, and whether pending calls
// are flushed.
func MessagesFingerprint(msgs []agentmem.Message, flush bool) (string, error) {
	parts := make([][]byte, 0, len(msgs)+1)
	for _, m := range msgs {
		m.Time = time.Time{}
		b, err := json.Marshal(m)
		if err != nil {
			return "", err
		}
		parts = append(parts, b)
	}
	f := []byte("keep pending")
	if flush {
		f = []byte("flush pending")
	}
	return Fingerprint("messages", append(parts, f)...), nil
}
