package scratchpad

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// Context renders the Pad for a model's context:
//
//	Stored Variables:
//	  user_id: 12345
//	  username: john_doe
//	Observations:
//	  - Found user in database
//	Failed Attempts:
//	  - Tried to update without permission
//
// Variables are listed in key order with their values as compact JSON,
// except that a string is shown without quotes (an empty string as "").
// Only the most recent Options.ContextObservations observations and
// Options.ContextFailures failures are shown, oldest first. A section with
// nothing to show is omitted, and an empty Pad renders as "". Lines are
// separated by "\n" with no trailing newline. The continuation lines of a
// multi-line value or entry are indented by four spaces.
func (p *Pad) Context() string {
	lim := p.limits()
	var b strings.Builder
	p.mu.RLock()
	defer p.mu.RUnlock()
	line := func(s string) {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	if len(p.vars) > 0 {
		line("Stored Variables:")
		for _, k := range slices.Sorted(maps.Keys(p.vars)) {
			line("  " + k + ": " + indent(renderValue(p.vars[k])))
		}
	}
	section := func(title string, r *ring, n int) {
		if r.len() == 0 {
			return
		}
		line(title)
		for _, e := range r.last(n) {
			line("  - " + indent(e))
		}
	}
	section("Observations:", &p.observations, lim.ContextObservations)
	section("Failed Attempts:", &p.failures, lim.ContextFailures)
	return b.String()
}

// renderValue shows a stored JSON value: strings unquoted, everything else
// as its compact JSON.
func renderValue(raw json.RawMessage) string {
	if len(raw) == 0 || raw[0] != '"' {
		return string(raw)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(raw) // unreachable: stored values are valid JSON
	}
	if s == "" {
		return `""`
	}
	return s
}

// indent indents the continuation lines of a multi-line text so that it
// stays inside its list item.
func indent(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	s = lineEndings.Replace(s)
	return strings.ReplaceAll(s, "\n", "\n    ")
}
