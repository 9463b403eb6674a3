package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store/internal/stepnum"
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
	f := newFingerprinter(kind)
	for _, p := range parts {
		f.write(p)
	}
	return f.sum()
}

// fingerprinter computes a Fingerprint part by part: each part is
// written after its length, following a version tag and the kind.
type fingerprinter struct {
	h hash.Hash
	n [binary.MaxVarintLen64]byte
}

func newFingerprinter(kind string) *fingerprinter {
	f := &fingerprinter{h: sha256.New()}
	f.write([]byte("agentmem request 1"))
	f.write([]byte(kind))
	return f
}

// write writes one part, the concatenation of pieces.
func (f *fingerprinter) write(pieces ...[]byte) {
	n := 0
	for _, p := range pieces {
		n += len(p)
	}
	f.h.Write(f.n[:binary.PutUvarint(f.n[:], uint64(n))])
	for _, p := range pieces {
		f.h.Write(p)
	}
}

func (f *fingerprinter) sum() string { return hex.EncodeToString(f.h.Sum(nil)) }

// StepsFingerprint is the fingerprint of an append of steps and a
// compaction record as given (kind "steps"). A step counts as SameStep
// compares it, without its number and time, which the log and a server's
// clock fill in; the compaction counts as EncodeCompaction encodes it,
// new-step references included.
func StepsFingerprint(steps []agentmem.Step, c *CompactionRecord) (string, error) {
	return stepsFingerprint(steps, nil, c)
}

// stepsFingerprint is StepsFingerprint. encoded, if not nil, holds each
// step's EncodeStep encoding, from which the step's part is taken
// (unnumbered) rather than by encoding the step again.
func stepsFingerprint(steps []agentmem.Step, encoded [][]byte, c *CompactionRecord) (string, error) {
	f := newFingerprinter("steps")
	for i, s := range steps {
		if s == nil {
			return "", invalid(fmt.Sprintf("steps[%d]", i), "is nil")
		}
		f.write([]byte("step"))
		if encoded != nil {
			if pieces, ok := unnumbered(s, encoded[i]); ok {
				f.write(pieces[:]...)
				continue
			}
		}
		b, err := EncodeStep(withoutNumberAndTime(s))
		if err != nil {
			return "", err
		}
		f.write(b)
	}
	if c != nil {
		b, err := EncodeCompaction(c)
		if err != nil {
			return "", err
		}
		f.write([]byte("compaction"))
		f.write(b)
	}
	return f.sum(), nil
}

// zero is the number of a step without one, as JSON.
var zero = []byte("0")

// unnumbered returns EncodeStep(withoutNumberAndTime(s)) as pieces of
// enc, the step's EncodeStep encoding, and reports whether it could.
// EncodeStep writes the header first, in the order of StepInfo's fields,
// and leaves out a zero time:
//
//	{"type":"<kind>","number":<n>,"id":"<id>","time":"<RFC 3339>",...
//
// so the step without its number and time is enc with the number 0 and
// the time member cut out. On any other shape it reports false, and the
// caller encodes the step again. TestUnnumbered checks the bytes against
// that encoding.
func unnumbered(s agentmem.Step, enc []byte) (pieces [4][]byte, ok bool) {
	n, j, ok := stepnum.Find(enc, s.Kind())
	if !ok {
		return pieces, false
	}
	rest := enc[j:]
	info := s.Info()
	if info.Time.IsZero() {
		return [4][]byte{enc[:n], zero, rest}, true
	}
	// The ID, if any, stays; the time after it goes.
	id := 0
	if info.ID != "" {
		if id = stringMember(rest, `,"id":`); id < 0 {
			return pieces, false
		}
	}
	const timeKey = `,"time":"`
	var tb [64]byte
	t := append(info.Time.AppendFormat(tb[:0], time.RFC3339Nano), '"')
	after := rest[id:]
	if !bytes.HasPrefix(after, []byte(timeKey)) || !bytes.HasPrefix(after[len(timeKey):], t) {
		return pieces, false
	}
	return [4][]byte{enc[:n], zero, rest[:id], after[len(timeKey)+len(t):]}, true
}

// stringMember returns the length of the object member at the start of b
// whose key (comma, quoted name and colon) is key and whose value is a
// string, or -1 if b does not start with one.
func stringMember(b []byte, key string) int {
	if !bytes.HasPrefix(b, []byte(key)) || len(b) == len(key) || b[len(key)] != '"' {
		return -1
	}
	for i := len(key) + 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// WithStepsKey returns req named by the idempotency key key, with the
// fingerprint StepsFingerprint(req.Steps, req.Compaction): what a server
// records for an append of steps sent with a key. It encodes each step
// once, for the fingerprint and for the log: the request it returns
// carries the encodings to ValidateAppendEncoded, which a backend's
// Append calls, so that the store does not encode the steps again. They
// stand for the request's steps as long as Steps holds the same values
// (steps are never changed in place). A step that does not encode leaves
// its encoding, and the error, to the store. Errors are StepsFingerprint's.
func WithStepsKey(req AppendRequest, key string) (AppendRequest, error) {
	var enc [][]byte
	if len(req.Steps) > 0 {
		enc = make([][]byte, len(req.Steps))
		for i, s := range req.Steps {
			b, err := EncodeStep(s)
			if err != nil {
				enc = nil
				break
			}
			enc[i] = b
		}
	}
	fp, err := stepsFingerprint(req.Steps, enc, req.Compaction)
	if err != nil {
		return req, err
	}
	req.Idempotency = &Idempotency{Key: key, Fingerprint: fp}
	req.encoded = nil
	if enc != nil {
		req.encoded = &encodedSteps{steps: slices.Clone(req.Steps), b: enc}
	}
	return req, nil
}

// encodedSteps are the encodings of an AppendRequest's steps, made before
// the request reached its store (WithStepsKey).
type encodedSteps struct {
	// steps are the steps encoded: the encodings stand for a request's
	// Steps only while it holds these same values.
	steps []agentmem.Step
	b     [][]byte
}

// of returns the encodings of steps, or nil if they are not the steps
// encoded.
func (e *encodedSteps) of(steps []agentmem.Step) [][]byte {
	if e == nil || len(e.steps) != len(steps) {
		return nil
	}
	for i, s := range steps {
		if s != e.steps[i] {
			return nil
		}
	}
	return e.b
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
