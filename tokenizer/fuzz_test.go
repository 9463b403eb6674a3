package tokenizer

import (
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzCount checks, for both BPE encodings, that Count(s) == len(Encode(s)),
// that Decode(Encode(s)) == s for valid UTF-8 (and s with each invalid byte
// replaced by U+FFFD otherwise), that the IDs equal tiktoken-go's for
// inputs short enough for it, and that nothing panics. Seeds are in
// testdata/fuzz/FuzzCount.
func FuzzCount(f *testing.F) {
	for _, s := range goldenCases[:40] {
		f.Add(s)
	}
	encs := []Encoder{mustEncoder(f, O200kBase), mustEncoder(f, CL100kBase)}
	f.Fuzz(func(t *testing.T, s string) {
		for i, e := range encs {
			ids := e.Encode(s)
			if n := e.Count(s); n != len(ids) {
				t.Fatalf("%s: Count = %d, len(Encode) = %d", e.Name(), n, len(ids))
			}
			want := s
			if !utf8.ValidString(s) {
				want = string([]rune(s))
			}
			if got := e.Decode(ids); got != want {
				t.Fatalf("%s: Decode(Encode(s)) = %q, want %q", e.Name(), got, want)
			}
			if len(s) <= refMaxLen {
				ref := refEncoding(t, []string{O200kBase, CL100kBase}[i])
				if want := ref.EncodeOrdinary(s); !slices.Equal(ids, want) {
					t.Fatalf("%s: Encode = %v, tiktoken-go: %v", e.Name(), ids, want)
				}
			}
		}
		NewHeuristic().Count(s)
	})
}
