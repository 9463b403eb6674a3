package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// The split patterns of tiktoken (tiktoken_ext/openai_public.py), as
// tiktoken-go compiles them with regexp2: the specification that nextO200k
// and nextCL100k implement by hand. TestSplitMatchesRegexp compares piece
// boundaries directly, which localises a disagreement better than token IDs.
var (
	o200kPattern = strings.Join([]string{
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
		`\p{N}{1,3}`,
		` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
		`\s*[\r\n]+`,
		`\s+(?!\S)`,
		`\s+`,
	}, "|")
	cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

var splitPatterns = map[string]*regexp2.Regexp{
	O200kBase:  regexp2.MustCompile(o200kPattern, regexp2.None),
	CL100kBase: regexp2.MustCompile(cl100kPattern, regexp2.None),
}

var splitters = map[string]splitter{O200kBase: nextO200k, CL100kBase: nextCL100k}

// regexpPieces splits s (valid UTF-8) with the regexp2 pattern.
func regexpPieces(name, s string) []string {
	runes := []rune(s)
	var pieces []string
	runePos, bytePos := 0, 0
	advance := func(to int) {
		for ; runePos < to; runePos++ {
			bytePos += utf8.RuneLen(runes[runePos])
		}
	}
	m, _ := splitPatterns[name].FindRunesMatch(runes)
	for m != nil {
		advance(m.Index)
		start := bytePos
		advance(m.Index + m.Length)
		pieces = append(pieces, s[start:bytePos])
		m, _ = splitPatterns[name].FindNextMatch(m)
	}
	return pieces
}

// handPieces splits s (valid UTF-8) with the hand-written matcher.
func handPieces(name, s string) []string {
	loadClasses()
	var pieces []string
	for i := 0; i < len(s); {
		j := splitters[name](s, i)
		if j <= i || j > len(s) {
			panic("splitter made no progress")
		}
		pieces = append(pieces, s[i:j])
		i = j
	}
	return pieces
}

func checkSplit(t *testing.T, name, s string) {
	t.Helper()
	s = validText(s)
	got, want := handPieces(name, s), regexpPieces(name, s)
	for k := range min(len(got), len(want)) {
		if got[k] != want[k] {
			t.Fatalf("%s split of %.200q: piece %d is %q, regexp2 has %q (after %q)",
				name, s, k, got[k], want[k], strings.Join(want[max(0, k-3):k], "|"))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s split of %.200q: %d pieces, regexp2 has %d", name, s, len(got), len(want))
	}
}

// TestSplitMatchesRegexp compares the hand-written pre-tokenizers with the
// regexp2 patterns on the edge cases, the stress corpus and the test corpus.
func TestSplitMatchesRegexp(t *testing.T) {
	inputs := append([]string{}, goldenCases...)
	inputs = append(inputs, stressCorpus(stressSeed, stressDocs())...)
	step := 1
	if raceEnabled || testing.Short() {
		step = 16
	}
	for i, d := range corpusDocs() {
		if i%step == 0 {
			inputs = append(inputs, d)
		}
	}
	for _, name := range []string{O200kBase, CL100kBase} {
		for _, s := range inputs {
			checkSplit(t, name, s)
		}
	}
}
