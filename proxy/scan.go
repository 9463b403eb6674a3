package proxy

import (
	"encoding/json"
	"slices"

	"github.com/agentmem/agentmem/internal/jsoncheck"
)

// scanned is a request body split without decoding it, for the fast path
// (memo.go): its members and the raw elements of its messages member.
type scanned struct {
	fields map[string]json.RawMessage
	raws   []json.RawMessage
}

// scanBody splits a body into its members, and its messages member into
// its elements, checking the JSON between them (braces, brackets, colons,
// commas, plain distinct keys) but not the values, which the caller
// checks, or knows to be the bytes of values checked before. It returns
// false on anything else (the general path then decodes the body).
func scanBody(body []byte) (*scanned, bool) {
	s := &scanned{fields: map[string]json.RawMessage{}}
	ok := scanContainer(body, '{', '}', func(key, raw []byte) bool {
		if _, dup := s.fields[string(key)]; dup {
			return false
		}
		s.fields[string(key)] = raw
		return true
	})
	if !ok {
		return nil, false
	}
	msgs, found := s.fields["messages"]
	if !found {
		return nil, false
	}
	ok = scanContainer(msgs, '[', ']', func(_, raw []byte) bool {
		s.raws = append(s.raws, raw)
		return true
	})
	return s, ok
}

// scanContainer calls fn with each member (key and value) of an object
// or element of an array that makes up all of d (white space aside).
func scanContainer(d []byte, open, close byte, fn func(key, raw []byte) bool) bool {
	i := skipWS(d, 0)
	if i >= len(d) || d[i] != open {
		return false
	}
	i = skipWS(d, i+1)
	if i < len(d) && d[i] == close {
		return skipWS(d, i+1) == len(d)
	}
	for i < len(d) {
		var key []byte
		if open == '{' {
			end := jsoncheck.ValueEnd(d, i)
			if d[i] != '"' || end <= i+1 || d[end-1] != '"' || !plainKey(d[i+1:end-1]) {
				return false
			}
			key = d[i+1 : end-1]
			if i = skipWS(d, end); i >= len(d) || d[i] != ':' {
				return false
			}
			i = skipWS(d, i+1)
		}
		end := jsoncheck.ValueEnd(d, i)
		if end <= i || !fn(key, d[i:end]) {
			return false
		}
		if i = skipWS(d, end); i >= len(d) {
			return false
		}
		switch d[i] {
		case ',':
			i = skipWS(d, i+1)
		case close:
			return skipWS(d, i+1) == len(d)
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
