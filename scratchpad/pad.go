package scratchpad

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/agentmem/agentmem/internal/textcut"
)

// MaxKeyBytes is the longest variable key, in bytes, that Store accepts.
const MaxKeyBytes = 128

// Default limits, used for Options fields that are zero or negative.
const (
	DefaultMaxVariables        = 256
	DefaultMaxValueBytes       = 16 << 10
	DefaultMaxObservations     = 50
	DefaultMaxFailures         = 20
	DefaultContextObservations = 5
	DefaultContextFailures     = 3
	DefaultMaxEntryBytes       = 4 << 10
)

// truncationMarker ends an observation or failure that was cut to
// Options.MaxEntryBytes.
const truncationMarker = "… [truncated]"

// Options bounds a Pad. A field that is zero or negative takes its default
// (the Default* constants).
type Options struct {
	// MaxVariables is the number of variables a Pad holds; storing a new
	// key beyond it fails with ErrFull (replacing a value does not).
	// Default 256.
	MaxVariables int
	// MaxValueBytes is the longest JSON encoding of a value that Store
	// accepts; a longer one fails with ErrValueTooLarge. Default 16 KiB.
	MaxValueBytes int
	// MaxObservations is the number of observations retained; recording
	// another drops the oldest. Default 50.
	MaxObservations int
	// MaxFailures is the number of failures retained; recording another
	// drops the oldest. Default 20.
	MaxFailures int
	// ContextObservations is the number of most recent observations that
	// Context shows. Default 5.
	ContextObservations int
	// ContextFailures is the number of most recent failures that Context
	// shows. Default 3.
	ContextFailures int
	// MaxEntryBytes is the longest observation or failure, in bytes. A
	// longer one is cut at a character boundary and ends with the marker
	// "… [truncated]", the whole fitting in MaxEntryBytes. Default 4 KiB.
	MaxEntryBytes int
}

// withDefaults returns o with every unset field at its default.
func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxVariables, DefaultMaxVariables)
	def(&o.MaxValueBytes, DefaultMaxValueBytes)
	def(&o.MaxObservations, DefaultMaxObservations)
	def(&o.MaxFailures, DefaultMaxFailures)
	def(&o.ContextObservations, DefaultContextObservations)
	def(&o.ContextFailures, DefaultContextFailures)
	def(&o.MaxEntryBytes, DefaultMaxEntryBytes)
	return o
}

// Pad is an agent's working memory: variables (JSON values by key), the
// most recent observations and the most recent failed attempts, all
// bounded by its Options.
//
// A Pad is safe for concurrent use by multiple goroutines. Create one with
// New; the zero value is an empty Pad with the default Options. A Pad must
// not be copied after first use.
type Pad struct {
	opts Options // as given to New; read through limits

	mu           sync.RWMutex
	vars         map[string]json.RawMessage // compact JSON, never aliased outside
	observations ring
	failures     ring
}

// New returns an empty Pad bounded by opts.
func New(opts Options) *Pad {
	return &Pad{opts: opts.withDefaults(), vars: make(map[string]json.RawMessage)}
}

// limits returns the Pad's options with defaults applied (which matters
// only for a zero Pad). opts is never written after New, so no lock is
// needed.
func (p *Pad) limits() Options { return p.opts.withDefaults() }

// Store sets the variable key to value, encoded as JSON (a json.RawMessage
// is stored as given, compacted). Storing under an existing key replaces
// its value.
//
// The key must be 1 to MaxKeyBytes bytes of valid UTF-8 without control
// characters (ErrInvalidKey). The value must encode (ErrInvalidValue) to at
// most Options.MaxValueBytes bytes (ErrValueTooLarge), and a new key is
// refused when the Pad already holds Options.MaxVariables variables
// (ErrFull). On error the Pad is unchanged.
func (p *Pad) Store(key string, value any) error {
	if err := checkKey(key); err != nil {
		return err
	}
	// Encode outside the lock: value's MarshalJSON may be arbitrary code.
	raw, err := encodeValue(value)
	if err != nil {
		return fmt.Errorf("%w: value for %q: %v", ErrInvalidValue, key, err)
	}
	lim := p.limits()
	if len(raw) > lim.MaxValueBytes {
		return fmt.Errorf("%w: value for %q is %d bytes of JSON, the limit is %d", ErrValueTooLarge, key, len(raw), lim.MaxValueBytes)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, exists := p.vars[key]; !exists && len(p.vars) >= lim.MaxVariables {
		return fmt.Errorf("%w: cannot store %q, the pad already holds %d variables; delete one first", ErrFull, key, len(p.vars))
	}
	if p.vars == nil {
		p.vars = make(map[string]json.RawMessage)
	}
	p.vars[key] = raw
	return nil
}

// Recall returns the JSON value stored under key, and whether there was
// one. The returned slice is the caller's to keep.
func (p *Pad) Recall(key string) (json.RawMessage, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.vars[key]
	if !ok {
		return nil, false
	}
	return bytes.Clone(v), true
}

// Delete removes the variable key and reports whether it existed.
func (p *Pad) Delete(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.vars[key]
	delete(p.vars, key)
	return ok
}

// Keys returns the keys of the stored variables in sorted order.
func (p *Pad) Keys() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Sorted(maps.Keys(p.vars))
}

// Observe records an observation: something the agent learned or noticed.
// Surrounding white space is trimmed and line endings are normalised to
// "\n". Empty text is ignored. Text longer than Options.MaxEntryBytes is
// truncated with a marker, and invalid UTF-8 is replaced by U+FFFD. When
// more than Options.MaxObservations are held, the oldest is dropped.
func (p *Pad) Observe(text string) { p.record(&p.observations, text, p.limits().MaxObservations) }

// Fail records a failed attempt, so that the agent does not repeat it. The
// text is cleaned as by Observe; when more than Options.MaxFailures are
// held, the oldest is dropped.
func (p *Pad) Fail(text string) { p.record(&p.failures, text, p.limits().MaxFailures) }

// record cleans text and appends it to r, returning what was stored ("" if
// nothing was) and whether it was truncated.
func (p *Pad) record(r *ring, text string, max int) (entry string, truncated bool) {
	entry, truncated = cleanEntry(text, p.limits().MaxEntryBytes)
	if entry == "" {
		return "", false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r.push(entry, max)
	return entry, truncated
}

// Observations returns the retained observations, oldest first.
func (p *Pad) Observations() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.observations.last(-1)
}

// Failures returns the retained failures, oldest first.
func (p *Pad) Failures() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.failures.last(-1)
}

// Clear removes every variable, observation and failure.
func (p *Pad) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.vars)
	p.observations = ring{}
	p.failures = ring{}
}

// checkKey validates a variable key.
func checkKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: the key is empty", ErrInvalidKey)
	case len(key) > MaxKeyBytes:
		return fmt.Errorf("%w: the key %q is %d bytes long, the limit is %d", ErrInvalidKey, clip(key), len(key), MaxKeyBytes)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: the key %q is not valid UTF-8", ErrInvalidKey, key)
	case strings.ContainsFunc(key, unicode.IsControl):
		return fmt.Errorf("%w: the key %q contains a control character", ErrInvalidKey, key)
	}
	return nil
}

// encodeValue returns the compact JSON encoding of v, without HTML
// escaping and with any invalid UTF-8 (which can only occur inside strings
// of a json.RawMessage) replaced by U+FFFD. It is idempotent: encoding the
// result as a json.RawMessage yields the same bytes.
func encodeValue(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if !utf8.Valid(b) {
		b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	}
	return json.RawMessage(bytes.Clone(b)), nil
}

// lineEndings normalises "\r\n" and lone "\r" to "\n".
var lineEndings = strings.NewReplacer("\r\n", "\n", "\r", "\n")

// cleanEntry prepares an observation or failure for storage and reports
// whether it had to be truncated. It is idempotent, so stored entries
// survive a JSON round trip unchanged.
func cleanEntry(text string, max int) (string, bool) {
	text = strings.ToValidUTF8(text, "\uFFFD")
	text = lineEndings.Replace(text)
	text = strings.TrimSpace(text)
	if len(text) <= max {
		return text, false
	}
	if max <= len(truncationMarker) {
		return strings.TrimSpace(textcut.Prefix(text, max)), true
	}
	return strings.TrimRightFunc(textcut.Prefix(text, max-len(truncationMarker)), unicode.IsSpace) + truncationMarker, true
}

// ring holds the most recent entries of a log, up to a maximum fixed by
// the caller. The zero value is empty.
type ring struct {
	buf   []string // grows to the maximum, then wraps
	start int      // index of the oldest entry once buf is full
}

// push appends s, dropping the oldest entry when max are held.
func (r *ring) push(s string, max int) {
	if len(r.buf) < max {
		r.buf = append(r.buf, s) // start is 0 until the buffer is full
		return
	}
	r.buf[r.start] = s
	r.start = (r.start + 1) % len(r.buf)
}

// len returns the number of entries held.
func (r *ring) len() int { return len(r.buf) }

// last returns the n most recent entries, oldest first; n < 0 means all.
func (r *ring) last(n int) []string {
	if n < 0 || n > len(r.buf) {
		n = len(r.buf)
	}
	out := make([]string, 0, n)
	for i := len(r.buf) - n; i < len(r.buf); i++ {
		out = append(out, r.buf[(r.start+i)%len(r.buf)])
	}
	return out
}
