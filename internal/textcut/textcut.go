// Package textcut cuts UTF-8 text to a number of bytes without splitting
// a character: what every bound on stored or shown text (a fact, a
// summary, an error message, a scratchpad note) needs.
package textcut

import "unicode/utf8"

// Floor moves the byte offset i of s back to the start of the character
// it falls in (i itself when it is one, or is 0 or len(s) or beyond).
func Floor(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// Prefix returns the longest prefix of s of at most n bytes that does not
// split a character.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:Floor(s, max(n, 0))]
}
