package recall

import (
	"slices"
	"strings"
	"testing"
	"unicode"
)

// tokenizeReference is Tokenize's definition, written plainly: the
// fast Tokenize must give the same terms.
func tokenizeReference(text string) []string {
	var terms []string
	for _, f := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if stopWords[f] {
			continue
		}
		if len(f) > MaxTermBytes {
			f = strings.ToValidUTF8(f[:MaxTermBytes], "")
		}
		terms = append(terms, Stem(f))
	}
	return terms
}

// Tokenize's terms for a few texts, exactly, in calls that reuse the
// buffers of those before.
func TestTokenizeTerms(t *testing.T) {
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"The Cats AREN'T running, Anna's café-Bar: 2023!", []string{"cat", "run", "anna", "café", "bar", "2023"}},
		{"Traceback: DeadlockError after 2024112415 ms on req_f9a6dabda26c; retrying the container's release.",
			[]string{"traceback", "deadlockerror", "2024112415", "ms", "req", "f9a6dabda26c", "retri", "contain", "releas"}},
		{"KELVIN \u212A İSTANBUL ΣΊΣΥΦΟΣ \xff generously", []string{"kelvin", "istanbul", "σίσυφοσ", "generous"}},
		{"ourselves themselves yourselves organizations", []string{"organ"}},
		{"", []string{}},
	} {
		for range 2 { // the second time with the buffers of the first
			if got := Tokenize(tt.text); !slices.Equal(got, tt.want) || got == nil {
				t.Errorf("Tokenize(%q) = %#v, want %#v", tt.text, got, tt.want)
			}
		}
	}
}

func FuzzTokenize(f *testing.F) {
	for _, s := range []string{
		"The Cats AREN'T running, Anna's café-Bar: 2023! Ünïcode_Straße generously",
		"call req_f9a6dabda26c returned 2024112415 rows",
		"\xff\xfeinvalid\xc3 utf-8 \uFFFD replacement",
		"KELVIN \u212A İSTANBUL ΣΊΣΥΦΟΣ",
		strings.Repeat("a", 300) + " " + strings.Repeat("é", 200),
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, want := Tokenize(text), tokenizeReference(text)
		if !slices.Equal(got, want) {
			t.Fatalf("Tokenize(%q) = %q, want %q", text, got, want)
		}
	})
}

// benchText is a tool's output, as tokenized when a turn is indexed.
var benchText = strings.Repeat("Traceback (most recent call last): File \"docs/opts.py\", line 42, in compute: "+
	"DeadlockError: lock timeout after 2024112415 ms on req_f9a6dabda26c; retrying the container's release. ", 20)

func BenchmarkTokenize(b *testing.B) { benchTokenize(b, Tokenize) }

func BenchmarkTokenizeReference(b *testing.B) { benchTokenize(b, tokenizeReference) }

func benchTokenize(b *testing.B, tokenize func(string) []string) {
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		tokenize(benchText)
	}
}
