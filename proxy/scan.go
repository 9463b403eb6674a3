package proxy

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/agentmem/agentmem/internal/jsoncheck"
)

// scanned is a request body split without decoding it, for the fast path
// (memo.go). It holds its members, in order, and the raw elements of its
// messages member that follow a known prefix of it.
type scanned struct {
	fields map[string]json.RawMessage
	keys   []string
	// msgs is the messages member's value from its opening bracket to
	// the end of its last element (the bracket alone when it has none).
	msgs []byte
	// tail are the elements of the messages member after the known
	// prefix.
	tail []json.RawMessage
}

// scanBody splits a body into its members, and its messages member into
// its elements. It checks the JSON between them (braces, brackets, colons,
// commas, plain distinct keys) but not the values. The caller checks
// those, or knows them to be the bytes of values checked before. known is
// called with the messages member from its opening bracket to the end of
// the body. It returns how many of those bytes are a known prefix of it
// (the bracket and whole elements), which are not scanned, or -1 to stop
// the scan. scanBody returns false on anything else; the general path then
// decodes the body.
func scanBody(body []byte, known func(msgs []byte) int) (*scanned, bool) {
	s := &scanned{fields: map[string]json.RawMessage{}}
	ok := scanContainer(body, 0, '{', '}', func(key []byte, i int) int {
		k := string(key)
		if _, dup := s.fields[k]; dup {
			return -1
		}
		end := -1
		if k == "messages" && i < len(body) && body[i] == '[' {
			end = s.scanMessages(body, i, known(body[i:]))
		} else if e := jsoncheck.ValueEnd(body, i); e > i {
			end = e
		}
		if end < 0 {
			return -1
		}
		s.fields[k] = body[i:end]
		s.keys = append(s.keys, k)
		return end
	})
	if !ok || s.msgs == nil {
		return nil, false
	}
	return s, true
}

// scanMessages scans the messages member that opens at body[i], whose
// first skip bytes are known, and returns the offset after it, or -1.
func (s *scanned) scanMessages(body []byte, i, skip int) int {
	if skip < 0 {
		return -1
	}
	last := i + 1 // the end of the last element
	from := i
	if skip > 1 {
		from, last = i+skip, i+skip
		// The known part ends with an element: what follows is a comma
		// or the closing bracket.
		j := skipWS(body, from)
		if j >= len(body) || body[j] != ',' && body[j] != ']' {
			return -1
		}
		if body[j] == ']' {
			s.msgs = body[i:last]
			return j + 1
		}
		from = j // scanContainer's elements go on after the comma
	}
	end := -1
	ok := scanContainerFrom(body, from, from != i, '[', ']', func(_ []byte, at int) int {
		e := jsoncheck.ValueEnd(body, at)
		if e <= at {
			return -1
		}
		s.tail = append(s.tail, body[at:e])
		last = e
		return e
	}, &end)
	if !ok {
		return -1
	}
	s.msgs = body[i:last]
	return end
}

// scanContainer calls fn with each member of an object, or element of an
// array, that makes up all of d from offset i, white space aside. fn gets
// the member's key and the offset of its value. It returns the offset
// after the value, or -1 to stop.
func scanContainer(d []byte, i int, open, close byte, fn func(key []byte, at int) int) bool {
	end := -1
	if !scanContainerFrom(d, i, false, open, close, fn, &end) {
		return false
	}
	return skipWS(d, end) == len(d)
}

// scanContainerFrom scans a container that opens at d[i]. With inside, it
// scans one whose elements go on after the comma at d[i]. It sets *end to
// the offset after its closing bracket.
func scanContainerFrom(d []byte, i int, inside bool, open, close byte, fn func(key []byte, at int) int, end *int) bool {
	i = skipWS(d, i)
	if i >= len(d) || !inside && d[i] != open || inside && d[i] != ',' {
		return false
	}
	i = skipWS(d, i+1)
	if !inside && i < len(d) && d[i] == close {
		*end = i + 1
		return true
	}
	for i < len(d) {
		var key []byte
		if open == '{' {
			e := jsoncheck.ValueEnd(d, i)
			if d[i] != '"' || e <= i+1 || d[e-1] != '"' || !plainKey(d[i+1:e-1]) {
				return false
			}
			key = d[i+1 : e-1]
			if i = skipWS(d, e); i >= len(d) || d[i] != ':' {
				return false
			}
			i = skipWS(d, i+1)
		}
		e := fn(key, i)
		if e <= i {
			return false
		}
		if i = skipWS(d, e); i >= len(d) {
			return false
		}
		switch d[i] {
		case ',':
			i = skipWS(d, i+1)
		case close:
			*end = i + 1
			return true
		default:
			return false
		}
	}
	return false
}

// plainKey reports whether a key is printable ASCII without escapes.
func plainKey(k []byte) bool {
	return !slices.ContainsFunc(k, func(c byte) bool { return c < 0x20 || c > 0x7e || c == '\\' || c == '"' })
}

func skipWS(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// messagesPrefix returns a checked messages member's value from its
// opening bracket to the end of its last element.
func messagesPrefix(raw json.RawMessage) []byte {
	t := bytes.TrimSpace(raw)
	if len(t) < 2 || t[0] != '[' {
		return nil
	}
	return bytes.TrimRight(t[:len(t)-1], " \t\n\r")
}

// encodeBody writes a request body: its members in their order (keys,
// then any other members of fields, in sorted order), each value as it
// is. The values must be valid JSON (checked, or encoded by the proxy).
func encodeBody(keys []string, fields map[string]json.RawMessage) ([]byte, error) {
	n := 2
	for k, v := range fields {
		n += len(k) + len(v) + 4
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	write := func(k string) error {
		v, ok := fields[k]
		if !ok {
			return nil
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		if plainKey([]byte(k)) {
			b = append(append(append(b, '"'), k...), '"')
		} else {
			q, err := json.Marshal(k)
			if err != nil {
				return err
			}
			b = append(b, q...)
		}
		b = append(append(b, ':'), v...)
		return nil
	}
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		if err := write(k); err != nil {
			return nil, err
		}
	}
	var rest []string
	for k := range fields {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		if err := write(k); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}
