// Package jsoncheck checks JSON text that comes from outside (API request
// bodies, MCP tool arguments) for what encoding/json lets through
// silently. That is bytes that are not UTF-8 and \u escapes of lone UTF-16
// surrogates, which it decodes as U+FFFD. It is also keys repeated in one
// object, of which it keeps the last. The HTTP API and the MCP server
// refuse such input with the error Check returns, which names where the
// problem is.
package jsoncheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// Error is what Check refuses, and where.
type Error struct {
	// Path names the offending value, or the repeated key, in JSON-path
	// style: "steps[2].metadata.k", "messages[0].content"; keys that are
	// not simple names are quoted ("metadata[\"a b\"]"). It is "" for the
	// text as a whole (malformed JSON, data after the value).
	Path string
	// Offset is the byte offset in the text at which the problem was
	// found.
	Offset int64
	// Reason says what is wrong, as a predicate of Path (or of the text):
	// "is not valid UTF-8 (byte 12)".
	Reason string
	// Err, from Decode, is the error of a type that decodes itself and
	// refused its value (Path names the value); nil otherwise.
	Err error
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Error implements error.
func (e *Error) Error() string {
	if e.Path == "" {
		return "json: the text " + e.Reason
	}
	return "json: " + e.Path + " " + e.Reason
}

// Check checks that data is exactly one JSON value (surrounding white
// space aside), in valid UTF-8. Its \u escapes must be valid Unicode: no
// lone surrogate, though a pair is fine. Its objects must never repeat a
// key; keys compare after unescaping, so "a" and "\u0061" are the same
// key. It returns nil or an *Error.
func Check(data []byte) error {
	if !json.Valid(data) {
		return syntaxError(data)
	}
	c := checker{data: data}
	return c.run()
}

// syntaxError describes why data, which json.Valid refuses, is not one
// JSON value.
func syntaxError(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	err := dec.Decode(&v)
	if err == nil {
		return &Error{Offset: dec.InputOffset(), Reason: "has data after the JSON value"}
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return &Error{Offset: se.Offset, Reason: fmt.Sprintf("is malformed JSON at byte %d: %v", se.Offset, se)}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Offset: int64(len(data)), Reason: "is malformed JSON: it ends before the value does"}
	}
	return &Error{Offset: dec.InputOffset(), Reason: "is malformed JSON: " + err.Error()}
}

// frame is an open object or array, and where the scan is in it.
type frame struct {
	array bool
	// index is the index of the current element of an array.
	index int
	// key is the current key of an object (unescaped), and keys the keys
	// seen so far (in a map once there are many). wantKey says whether the
	// next string is a key. Keys without escapes share the text's bytes.
	key     []byte
	keys    [][]byte
	keySet  map[string]struct{}
	wantKey bool
}

// manyKeys is the number of keys from which an object's keys go into a
// map rather than a list.
const manyKeys = 16

// checker scans a text json.Valid accepts: only strings need a close look.
type checker struct {
	data  []byte
	stack []frame
}

func (c *checker) run() error {
	d := c.data
	for i := 0; i < len(d); i++ {
		switch d[i] {
		case '{':
			c.value()
			c.push(frame{wantKey: true})
		case '[':
			c.value()
			c.push(frame{array: true, index: -1})
		case '}', ']':
			c.stack = c.stack[:len(c.stack)-1]
		case ',':
			if top := c.top(); !top.array {
				top.wantKey = true
			}
		case '"':
			end := stringEnd(d, i)
			if err := c.str(i, end); err != nil {
				return err
			}
			i = end - 1
		case ':', ' ', '\t', '\n', '\r':
		default: // a number, true, false or null
			c.value()
			for i+1 < len(d) && !delimiter(d[i+1]) {
				i++
			}
		}
	}
	return nil
}

// delimiter reports whether ch ends a number or a literal.
func delimiter(ch byte) bool {
	switch ch {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// stringEnd returns the offset just after the string that starts with the
// quote at d[i].
func stringEnd(d []byte, i int) int {
	for j := i + 1; j < len(d); {
		q := bytes.IndexByte(d[j:], '"')
		if q < 0 {
			break // json.Valid rules this out
		}
		j += q
		// The quote ends the string unless an odd number of backslashes
		// escapes it.
		n := 0
		for k := j - 1; k > i && d[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
	return len(d)
}

// str checks the string d[start:end] (quotes included): a key, or a
// value.
func (c *checker) str(start, end int) error {
	raw := c.data[start:end]
	top := c.top()
	isKey := top != nil && !top.array && top.wantKey
	escaped := bytes.IndexByte(raw, '\\') >= 0
	if isKey {
		top.wantKey = false
		top.key = unquote(raw, escaped)
	} else {
		c.value()
	}
	if !utf8.Valid(raw) {
		at := int64(start + invalidAt(raw))
		return &Error{Path: c.path(), Offset: at, Reason: fmt.Sprintf("is not valid UTF-8 (byte %d)", at)}
	}
	if escaped {
		if i := LoneSurrogate(raw); i >= 0 {
			at := int64(start + i)
			return &Error{Path: c.path(), Offset: at, Reason: fmt.Sprintf("has a lone UTF-16 surrogate escape (byte %d), which is not valid Unicode", at)}
		}
	}
	if isKey && !top.add(top.key) {
		return &Error{Path: c.path(), Offset: int64(start), Reason: "is a repeated key: the keys of a JSON object must be distinct"}
	}
	return nil
}

// push opens a frame, reusing the list of keys a closed frame at the same
// depth had.
func (c *checker) push(f frame) {
	if len(c.stack) < cap(c.stack) {
		c.stack = c.stack[:len(c.stack)+1]
		f.keys = c.stack[len(c.stack)-1].keys[:0]
		c.stack[len(c.stack)-1] = f
		return
	}
	c.stack = append(c.stack, f)
}

// add adds a key to the object's keys, or reports false if it is there.
func (f *frame) add(k []byte) bool {
	if f.keySet != nil {
		if _, dup := f.keySet[string(k)]; dup {
			return false
		}
		f.keySet[string(k)] = struct{}{}
		return true
	}
	for _, seen := range f.keys {
		if bytes.Equal(seen, k) {
			return false
		}
	}
	f.keys = append(f.keys, k)
	if len(f.keys) >= manyKeys {
		f.keySet = make(map[string]struct{}, 2*manyKeys)
		for _, seen := range f.keys {
			f.keySet[string(seen)] = struct{}{}
		}
	}
	return true
}

// unquote returns the text of a JSON string token.
func unquote(raw []byte, escaped bool) []byte {
	if !escaped {
		return raw[1 : len(raw)-1]
	}
	var s string
	_ = json.Unmarshal(raw, &s) // json.Valid accepted it
	return []byte(s)
}

// value records that a value starts in the innermost open object or array.
// It is the next element of an array, or the value of the current key of
// an object.
func (c *checker) value() {
	if top := c.top(); top != nil && top.array {
		top.index++
	}
}

func (c *checker) top() *frame {
	if len(c.stack) == 0 {
		return nil
	}
	return &c.stack[len(c.stack)-1]
}

// path is the path of the current value (or key) of the innermost frame.
func (c *checker) path() string {
	var b []byte
	for _, f := range c.stack {
		if f.array {
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(f.index), 10)
			b = append(b, ']')
			continue
		}
		b = appendKey(b, string(f.key))
	}
	return string(b)
}

// maxKeyInPath bounds the bytes of one key a path shows.
const maxKeyInPath = 64

// appendKey appends .key, or ["key"] for a key that is not a simple name.
func appendKey(b []byte, key string) []byte {
	if len(key) > maxKeyInPath {
		n := maxKeyInPath
		for n > 0 && !utf8.RuneStart(key[n]) {
			n--
		}
		key = key[:n] + "..."
	}
	if simple(key) {
		if len(b) > 0 {
			b = append(b, '.')
		}
		return append(b, key...)
	}
	b = append(b, '[')
	b = strconv.AppendQuote(b, key)
	return append(b, ']')
}

// simple reports whether a key can be shown bare: letters, digits, _ and
// -, not empty.
func simple(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		switch ch := key[i]; {
		case 'a' <= ch && ch <= 'z', 'A' <= ch && ch <= 'Z', '0' <= ch && ch <= '9', ch == '_', ch == '-':
		default:
			return false
		}
	}
	return true
}

// invalidAt returns the offset of the first byte of b that is not part of
// valid UTF-8.
func invalidAt(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// LoneSurrogate returns the offset of a \uD800-\uDFFF escape that is not
// half of a surrogate pair, or -1. encoding/json would decode one as
// U+FFFD, changing the text silently. A backslash appears in valid JSON
// only inside strings, so no string tracking is needed; malformed JSON is
// left to the decoder.
func LoneSurrogate(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' {
			i++ // skip the escaped character (it may be a backslash)
			continue
		}
		r, ok := hex4(b, i+2)
		if !ok {
			i++
			continue
		}
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
				if lo, ok := hex4(b, i+8); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					i += 11
					continue
				}
			}
			return i
		case r >= 0xDC00 && r <= 0xDFFF:
			return i
		}
		i += 5
	}
	return -1
}

// hex4 parses the four hex digits at b[i:i+4].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
