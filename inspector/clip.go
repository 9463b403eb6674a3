package inspector

import (
	"unicode"
	"unicode/utf8"
)

// segment is a run of text a page shows. Mark is set on a word that
// matches a term of a recall query. Cut, when not 0, is the number of
// bytes of a long word left out after the segment (see MaxShownWord).
type segment struct {
	Text string
	Mark bool
	Cut  int
}

// shownText is a text as a page shows it (clip): its segments, and More,
// the bytes of the text left out after them.
type shownText struct {
	Segs []segment
	More int
}

// Len is the number of bytes of text shown.
func (t shownText) Len() int {
	n := 0
	for _, s := range t.Segs {
		n += len(s.Text)
	}
	return n
}

// clipScan bounds how far clip reads into a text, in multiples of the
// bytes it may show. A text of long words shows little of what it reads,
// and what is past this is left out unread.
const clipScan = 8

// clip returns the part of text a page shows when it may show at most
// limit bytes of it. That is the text up to limit bytes, cut at a rune
// boundary, with every word (a run without white space) cut to
// MaxShownWord bytes. It reads at most clipScan times limit bytes of text,
// so its cost and its result are bounded by limit, however long text is.
func clip(text string, limit int) shownText {
	var out shownText
	if limit <= 0 {
		out.More = len(text)
		return out
	}
	scan := min(len(text), clipScan*max(limit, MaxShownWord))
	shown := 0 // bytes in out.Segs
	plain := 0 // start of the text not yet in a segment
	word := -1 // start of the current word, -1 outside one
	i := 0
	for i < scan {
		r, size := decodeRune(text, i)
		switch {
		case isSpace(r):
			word = -1
		case word < 0:
			word = i
		case i+size-word > MaxShownWord:
			// The word is too long: show its first bytes, to i, and
			// skip to its end.
			j := i
			for j < scan {
				r, size := decodeRune(text, j)
				if isSpace(r) {
					break
				}
				j += size
			}
			if j == scan && scan < len(text) {
				// The word goes on past what clip reads: the rest of
				// the text is left out.
				out.Segs = append(out.Segs, segment{Text: text[plain:i]})
				out.More = len(text) - i
				return out
			}
			out.Segs = append(out.Segs, segment{Text: text[plain:i], Cut: j - i})
			shown += i - plain
			plain, i, word = j, j, -1
			continue
		}
		if shown+i+size-plain > limit {
			break
		}
		i += size
	}
	if i > plain {
		out.Segs = append(out.Segs, segment{Text: text[plain:i]})
	}
	out.More = len(text) - i
	return out
}

// decodeRune returns the rune at byte i of s and its size.
func decodeRune(s string, i int) (rune, int) {
	if s[i] < utf8.RuneSelf {
		return rune(s[i]), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// isSpace reports whether r ends a word, for clip: white space.
func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || r == '\n' || r == '\t' || r == '\r' || r == '\v' || r == '\f'
	}
	return unicode.IsSpace(r)
}

// cutBytes cuts s to at most n bytes, at a rune boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
