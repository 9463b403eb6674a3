package tokenizer

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// The pre-tokenizers are hand-written matchers of the two encodings' split
// patterns (tiktoken_ext/openai_public.py). They have the semantics of a
// backtracking regular expression engine, as used by tiktoken
// (fancy-regex) and tiktoken-go (regexp2). The leftmost alternative is
// tried first, and greedy quantifiers give back one character at a time.
// Each function returns the end of the match that starts at i. The
// patterns match every character somewhere, so the matches tile the text.
// The character classes are Go's unicode tables, the same Unicode version
// regexp2 sees. \s is unicode.IsSpace, as in regexp2 and in Rust's Unicode
// White_Space.
//
// Both patterns' case-insensitive contractions ('s, 't, 're, 've, 'm, 'll,
// 'd) compare ASCII letters only. No other rune lower-cases to one of
// those letters in Go's tables, which is how regexp2 matches (?i).
//
// Only lookahead is used: the matchers read past a match's end at most
// while deciding it. So a match depends on nothing before its start.

// Character class bits of a rune.
const (
	cAny     uint8 = 1 << iota // every rune (0 is the end of the text)
	cLetter                    // \p{L}
	cNumber                    // \p{N}
	cSpace                     // \s
	cUpper                     // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	cLower                     // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	cNewline                   // \r or \n
)

// classTableSize covers the BMP and the SMP (emoji, mathematical letters);
// runes above it are classified with the unicode tables on each use.
const classTableSize = 0x20000

var (
	asciiClass [128]uint8
	classTable *[classTableSize]uint8
)

// buildClassTable fills classTable from Go's unicode tables, the ones
// regexp2 matches \p{L}, \p{N} and \s with.
func buildClassTable() *[classTableSize]uint8 {
	t := new([classTableSize]uint8)
	for r := range classTableSize {
		t[r] = cAny
	}
	set := func(tab *unicode.RangeTable, bit uint8) {
		for _, rg := range tab.R16 {
			for r := int(rg.Lo); r <= int(rg.Hi); r += int(rg.Stride) {
				t[r] |= bit
			}
		}
		for _, rg := range tab.R32 {
			for r := int(rg.Lo); r <= int(rg.Hi) && r < classTableSize; r += int(rg.Stride) {
				t[r] |= bit
			}
		}
	}
	set(unicode.L, cLetter)
	set(unicode.N, cNumber)
	set(unicode.White_Space, cSpace)
	for _, tab := range []*unicode.RangeTable{unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M} {
		set(tab, cUpper)
	}
	for _, tab := range []*unicode.RangeTable{unicode.Ll, unicode.Lm, unicode.Lo, unicode.M} {
		set(tab, cLower)
	}
	t['\r'] |= cNewline
	t['\n'] |= cNewline
	return t
}

// loadClasses builds the class tables once; every encoding's load calls it.
var loadClasses = sync.OnceFunc(func() {
	classTable = buildClassTable()
	copy(asciiClass[:], classTable[:128])
})

// slowClass classifies a rune above the table.
func slowClass(r rune) uint8 {
	c := cAny
	if unicode.IsLetter(r) {
		c |= cLetter
	}
	if unicode.IsNumber(r) {
		c |= cNumber
	}
	if unicode.IsSpace(r) {
		c |= cSpace
	}
	if unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M) {
		c |= cUpper
	}
	if unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M) {
		c |= cLower
	}
	return c
}

// classAt returns the class of the rune at byte i of s, which is valid
// UTF-8, and its length. It returns (0, 0) at the end of s.
func classAt(s string, i int) (uint8, int) {
	if i >= len(s) {
		return 0, 0
	}
	if b := s[i]; b < utf8.RuneSelf {
		return asciiClass[b], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	if r < classTableSize {
		return classTable[r], n
	}
	return slowClass(r), n
}

// isP is [^\r\n\p{L}\p{N}], isO is [^\s\p{L}\p{N}]; neither matches the end.
func isP(c uint8) bool { return c&(cAny|cLetter|cNumber|cNewline) == cAny }
func isO(c uint8) bool { return c&(cAny|cSpace|cLetter|cNumber) == cAny }

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at i: it returns the end
// of the match, or i if there is none.
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return i
	}
	switch s[i+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if i+2 < len(s) && s[i+2]|0x20 == 'e' {
			return i + 3
		}
	case 'l':
		if i+2 < len(s) && s[i+2]|0x20 == 'l' {
			return i + 3
		}
	}
	return i
}

// spaces matches \s*[\r\n]+|\s+(?!\S)|\s+ at i, where s has a \s rune.
func spaces(s string, i int) int {
	j, last, lastNL := i, i, -1
	for {
		c, n := classAt(s, j)
		if c&cSpace == 0 {
			break
		}
		if c&cNewline != 0 {
			lastNL = j + n
		}
		last = j
		j += n
	}
	switch {
	case lastNL >= 0: // \s*[\r\n]+ ends after the run's last newline
		return lastNL
	case j == len(s) || last == i: // \s+(?!\S) at the end, or \s+
		return j
	}
	return last // \s+(?!\S) gives back the last space
}

// nextCL100k returns the end of the match of cl100k_base's pattern at i < len(s):
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func nextCL100k(s string, i int) int {
	if s[i] == '\'' {
		if j := contraction(s, i); j > i {
			return j
		}
	}
	c0, n0 := classAt(s, i)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	j := -1
	if c0&cLetter != 0 {
		j = i + n0
	} else if isP(c0) {
		if c1, n1 := classAt(s, i+n0); c1&cLetter != 0 {
			j = i + n0 + n1
		}
	}
	if j >= 0 {
		for {
			c, n := classAt(s, j)
			if c&cLetter == 0 {
				return j
			}
			j += n
		}
	}
	// \p{N}{1,3}
	if c0&cNumber != 0 {
		j = i + n0
		for k := 0; k < 2; k++ {
			c, n := classAt(s, j)
			if c&cNumber == 0 {
				break
			}
			j += n
		}
		return j
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	j = i
	if s[i] == ' ' {
		if c1, _ := classAt(s, i+1); isO(c1) {
			j = i + 1
		}
	}
	if c, _ := classAt(s, j); isO(c) {
		for {
			c, n := classAt(s, j)
			if !isO(c) {
				break
			}
			j += n
		}
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	return spaces(s, i)
}

// nextO200k returns the end of the match of o200k_base's pattern at i < len(s):
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
func nextO200k(s string, i int) int {
	c0, n0 := classAt(s, i)
	word := c0&(cUpper|cLower) != 0 // the optional first class can be skipped
	p := isP(c0)                    // the optional first class can match
	if p || word {
		// The first alternative, with and then without the optional
		// first rune, then the second one.
		if p {
			if j := upperLower(s, i+n0); j >= 0 {
				return contraction(s, j)
			}
		}
		if word {
			if j := upperLower(s, i); j >= 0 {
				return contraction(s, j)
			}
		}
		if p {
			if j := upperThenLower(s, i+n0); j >= 0 {
				return contraction(s, j)
			}
		}
		if word {
			if j := upperThenLower(s, i); j >= 0 {
				return contraction(s, j)
			}
		}
	}
	// \p{N}{1,3}
	if c0&cNumber != 0 {
		j := i + n0
		for k := 0; k < 2; k++ {
			c, n := classAt(s, j)
			if c&cNumber == 0 {
				break
			}
			j += n
		}
		return j
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
	j := i
	if s[i] == ' ' {
		if c1, _ := classAt(s, i+1); isO(c1) {
			j = i + 1
		}
	}
	if c, _ := classAt(s, j); isO(c) {
		for {
			c, n := classAt(s, j)
			if !isO(c) {
				break
			}
			j += n
		}
		for j < len(s) && (s[j] == '\r' || s[j] == '\n' || s[j] == '/') {
			j++
		}
		return j
	}
	return spaces(s, i)
}

// upperLower matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
// at i and returns its end, or -1.
func upperLower(s string, i int) int {
	u, lastLower := i, -1
	for {
		c, n := classAt(s, u)
		if c&cUpper == 0 {
			if c&cLower == 0 {
				// The upper run is followed by no lower rune. The run gives back
				// runes up to its last one that is also lower, which then ends the
				// match.
				return lastLower
			}
			break
		}
		u += n
		if c&cLower != 0 {
			lastLower = u
		}
	}
	for {
		c, n := classAt(s, u)
		if c&cLower == 0 {
			return u
		}
		u += n
	}
}

// upperThenLower matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*
// at i and returns its end, or -1.
func upperThenLower(s string, i int) int {
	u := i
	for {
		c, n := classAt(s, u)
		if c&cUpper == 0 {
			break
		}
		u += n
	}
	if u == i {
		return -1
	}
	for {
		c, n := classAt(s, u)
		if c&cLower == 0 {
			return u
		}
		u += n
	}
}
