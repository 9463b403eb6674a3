package sqlindex

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
)

// The follower writes a document's metadata and a batch's document
// frequencies as JSON for every batch it indexes. encoding/json would
// reflect over each map, box its values and allocate more than the text;
// these write the same bytes directly.

// AppendJSONString appends s as encoding/json writes it (HTML-safe).
// A string with nothing to escape, as keys, identifiers and terms are, is
// copied as it is; any other goes through encoding/json.
func AppendJSONString(b []byte, s string) []byte {
	if !plainJSON(s) {
		j, _ := json.Marshal(s)
		return append(b, j...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainJSON reports whether encoding/json writes s as it is between
// quotes: printable ASCII but the quote, the backslash and the HTML
// characters <, > and &, or valid UTF-8 beyond ASCII but the line and
// paragraph separators.
func plainJSON(s string) bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			ascii = false
		case c < 0x20, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return ascii || utf8.ValidString(s) && !strings.Contains(s, "\u2028") && !strings.Contains(s, "\u2029")
}

// metadataJSON is m as encoding/json's Marshal writes it: an object with
// its keys in order, written into a string of its size.
func metadataJSON(m map[string]string) string {
	var first [8]string
	keys := first[:0]
	n := 1
	for k, v := range m {
		keys = append(keys, k)
		n += len(k) + len(v) + 6 // two pairs of quotes, the colon, a comma or the brace
	}
	slices.Sort(keys)
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONString(&b, k)
		b.WriteByte(':')
		writeJSONString(&b, m[k])
	}
	b.WriteByte('}')
	return b.String()
}

// writeJSONString is AppendJSONString into a strings.Builder.
func writeJSONString(b *strings.Builder, s string) {
	if !plainJSON(s) {
		j, _ := json.Marshal(s)
		b.Write(j)
		return
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
}
