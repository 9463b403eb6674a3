package scratchpad

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// SnapshotVersion is the version of the JSON format written by MarshalJSON.
const SnapshotVersion = 1

// snapshot is the JSON form of a Pad.
type snapshot struct {
	Version      int                        `json:"version"`
	Variables    map[string]json.RawMessage `json:"variables"`
	Observations []string                   `json:"observations"`
	Failures     []string                   `json:"failures"`
}

// MarshalJSON encodes the Pad as
//
//	{"version":1,"variables":{"key":value,...},"observations":[...],"failures":[...]}
//
// with variables in key order and entries oldest first. Every retained
// observation and failure is included, not only those Context shows.
func (p *Pad) MarshalJSON() ([]byte, error) {
	p.mu.RLock()
	s := snapshot{
		Version:      SnapshotVersion,
		Variables:    make(map[string]json.RawMessage, len(p.vars)),
		Observations: p.observations.last(-1),
		Failures:     p.failures.last(-1),
	}
	for k, v := range p.vars {
		s.Variables[k] = v // immutable once stored
	}
	p.mu.RUnlock()

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// snapshotFields are the members of a version 1 snapshot.
var snapshotFields = []string{"version", "variables", "observations", "failures"}

// UnmarshalJSON replaces the Pad's contents with a snapshot written by
// MarshalJSON. The version member is required and must be 1, and no other
// members than those MarshalJSON writes are allowed (ErrInvalidSnapshot).
//
// The Pad's bounds are enforced as if each variable were stored and each
// entry recorded in order. An invalid key, an oversized value or more than
// Options.MaxVariables variables is an error (ErrInvalidKey,
// ErrValueTooLarge, ErrFull). Entries are cleaned and truncated as by
// Observe. Only the newest Options.MaxObservations observations and
// Options.MaxFailures failures are kept. On error the Pad is unchanged.
func (p *Pad) UnmarshalJSON(data []byte) error {
	lim := p.limits()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidSnapshot, err)
	}
	if top == nil {
		return fmt.Errorf("%w: not a JSON object", ErrInvalidSnapshot)
	}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if !slices.Contains(snapshotFields, k) {
			return fmt.Errorf("%w: unknown member %q", ErrInvalidSnapshot, clip(k))
		}
	}
	rawVersion, ok := top["version"]
	if !ok {
		return fmt.Errorf("%w: missing version", ErrInvalidSnapshot)
	}
	var version int
	if err := json.Unmarshal(rawVersion, &version); err != nil || version != SnapshotVersion {
		return fmt.Errorf("%w: unsupported version %s (want %d)", ErrInvalidSnapshot, clip(string(rawVersion)), SnapshotVersion)
	}
	var s snapshot
	for _, m := range []struct {
		name string
		dst  any
	}{
		{"variables", &s.Variables},
		{"observations", &s.Observations},
		{"failures", &s.Failures},
	} {
		if raw, ok := top[m.name]; ok {
			if err := json.Unmarshal(raw, m.dst); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrInvalidSnapshot, m.name, err)
			}
		}
	}

	if len(s.Variables) > lim.MaxVariables {
		return fmt.Errorf("%w: the snapshot holds %d variables, the limit is %d", ErrFull, len(s.Variables), lim.MaxVariables)
	}
	vars := make(map[string]json.RawMessage, len(s.Variables))
	for _, k := range slices.Sorted(maps.Keys(s.Variables)) {
		if err := checkKey(k); err != nil {
			return err
		}
		raw, err := encodeValue(s.Variables[k])
		if err != nil {
			return fmt.Errorf("%w: value for %q: %v", ErrInvalidSnapshot, k, err)
		}
		if len(raw) > lim.MaxValueBytes {
			return fmt.Errorf("%w: value for %q is %d bytes of JSON, the limit is %d", ErrValueTooLarge, k, len(raw), lim.MaxValueBytes)
		}
		vars[k] = raw
	}
	load := func(entries []string, max int) ring {
		var r ring
		for _, e := range entries {
			if e, _ = cleanEntry(e, lim.MaxEntryBytes); e != "" {
				r.push(e, max)
			}
		}
		return r
	}
	observations := load(s.Observations, lim.MaxObservations)
	failures := load(s.Failures, lim.MaxFailures)

	p.mu.Lock()
	defer p.mu.Unlock()
	p.vars, p.observations, p.failures = vars, observations, failures
	return nil
}
