package tokenizer

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// The stress corpus: short documents assembled at random from the atoms
// below, which sit on the edges of the two split patterns: every Unicode
// category the patterns name (Lu, Ll, Lt, Lm, Lo, M, N, \s) and some they
// do not (Cf, Co, So, Sk, Pd), runes on both sides of the class table's
// limit (U+20000), case-insensitive contractions and near misses, digit
// runs of every length, whitespace runs around newlines ("\n \n",
// "  \n    \n"), emoji sequences and invalid UTF-8. Atoms are concatenated
// without separators, so every pair of them meets in some document.

const stressSeed = 0x737472657373 // "stress"

// stressDocs is how many documents the stress corpus has in this run.
func stressDocs() int {
	if raceEnabled || testing.Short() {
		return 3000
	}
	return 40000
}

var stressAtoms = []string{
	// ASCII
	"a", "Z", "the", "The", "THE", "hello", "World", "xML", "HTTPServer", "camelCase", "_", "__init__",
	"0", "7", "42", "123", "2024", "1234567", "3.14", "1,000", "0x1F",
	" ", " ", " ", "  ", "   ", "\t", "\t\t", "\n", "\n", "\r\n", "\r", "\v", "\f",
	"\n \n", "  \n    \n", " \n", "\n ", " \r\n ", "\n\n\n", "\t\n\t", "  \t", " \n\n  ",
	".", ",", "!", "?", "...", "--", "/", "//", "\\", "(", ")", "{", "}", "[", "]", "\"", "`",
	"=", "==", "=>", ":=", "#", "@", "$", "%", "^", "&", "*", "+", "-", "<", ">", "|", "~", ";", ":",
	"<|endoftext|>", "/*", "*/", "\n/", "./", "/\n", "!\n", "?\r\n",
	// contractions and near misses
	"'", "''", "'s", "'S", "'t", "'T", "'re", "'RE", "'rE", "'Re", "'ve", "'VE", "'vE", "'m", "'M",
	"'ll", "'LL", "'lL", "'Ll", "'d", "'D", "'r", "'v", "'l", "'x", "'st", "'dd", "'llo", "'em",
	"don't", "DON'T", "I'm", "we'Ve", "O'Neil", "'ſ", "'ſt", "'\u212a", "’s", "`s",
	// Latin and others with case
	"é", "É", "ß", "ẞ", "ǅ", "ǈ", "ῼ", "ᾈ", "ω", "Ω", "д", "Д", "ﬁ", "İ", "ı", "ǰ",
	// modifier letters, other letters, marks
	"ʰ", "ʼ", "ˆ", "ー", "々", "ꙿ", "日本", "語", "ا", "لعربية", "א", "ก", "ำ", "ñ", "n\u0303",
	"\u0301", "\u0300\u0301", "\u0e31", "\u093f", "\u094d", "\u20dd", "\u0488", "\u1ab0", "\ufe0f", "\ufe0e",
	// numbers
	"٣", "٣٤٥", "０", "１２３４", "Ⅻ", "ⅻ", "²", "½", "⑳", "𝟘", "𝟙𝟚𝟛𝟜", "〇",
	// spaces and format characters
	"\u00a0", "\u0085", "\u1680", "\u2000", "\u2003", "\u2009", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000",
	"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e",
	// symbols and punctuation outside ASCII
	"—", "–", "…", "«", "»", "“", "”", "€", "©", "°", "±", "→", "∑", "√", "♥", "★", "　", "。", "、", "，", "！",
	// emoji and supplementary planes
	"🙂", "😀😃", "👩‍💻", "👨‍👩‍👧‍👦", "🇫🇷", "🇺🇸🇯🇵", "❤️", "👍🏽", "#️⃣", "🏳️‍🌈",
	"𝔘𝔫𝔦", "𝐀𝐚", "𐐀", "𐐨", "𐐀𐐨", "𝒜", "\U00020000", "\U0002a6d6", "\U00030000", "\U000e0001", "\U000e0100",
	"\U000f0000", "\U0010ffff", "\ue000", "\uffff", "\ufffd",
	// invalid UTF-8
	"\xff", "\xfe", "\x80", "\xc3", "\xc3(", "\xe2\x82", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf", "\x00", "\x01",
}

// stressCorpus returns n documents generated from seed.
func stressCorpus(seed uint64, n int) []string {
	r := &rng{s: seed}
	docs := make([]string, n)
	var b strings.Builder
	for i := range docs {
		b.Reset()
		for k := 1 + r.intn(24); k > 0; k-- {
			switch r.intn(16) {
			case 0: // a run of one atom: long words, digit groups, whitespace
				b.WriteString(strings.Repeat(pick(r, stressAtoms), 1+r.intn(8)))
			case 1: // random bytes
				for m := 1 + r.intn(4); m > 0; m-- {
					b.WriteByte(byte(r.next()))
				}
			case 2: // a random rune from the BMP or above
				if r.intn(2) == 0 {
					b.WriteRune(rune(0x80 + r.intn(0x10000-0x80)))
				} else {
					b.WriteRune(rune(0x10000 + r.intn(0x110000-0x10000)))
				}
			default:
				b.WriteString(pick(r, stressAtoms))
			}
		}
		docs[i] = b.String()
	}
	return docs
}

// TestStressMatchesTiktokenGo compares the token IDs with tiktoken-go's on
// the stress corpus, and checks Count and Decode on it.
func TestStressMatchesTiktokenGo(t *testing.T) {
	docs := stressCorpus(stressSeed, stressDocs())
	for _, name := range []string{O200kBase, CL100kBase} {
		e, ref := mustEncoder(t, name), refEncoding(t, name)
		fails := 0
		for _, s := range docs {
			got, want := e.Encode(s), ref.EncodeOrdinary(s)
			if !slices.Equal(got, want) {
				t.Errorf("%s Encode(%q):\n got %v\nwant %v", name, s, got, want)
				if fails++; fails > 5 {
					t.FailNow()
				}
			}
			if n := e.Count(s); n != len(want) {
				t.Errorf("%s Count(%q) = %d, want %d", name, s, n, len(want))
			}
			if got := e.Decode(want); got != validText(s) {
				t.Errorf("%s Decode(Encode(%q)) = %q", name, s, got)
			}
		}
	}
}

// TestMixedMatchesTiktokenGo compares the token IDs with tiktoken-go's on
// the first 2 MiB of the benchmarks' text, in one call each, or on all
// 10 MiB with TOKENIZER_MIXED_FULL=1 (about 40 s). Skipped with -short and
// -race.
func TestMixedMatchesTiktokenGo(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("megabytes through tiktoken-go take seconds")
	}
	text := benchText()
	if os.Getenv("TOKENIZER_MIXED_FULL") != "1" {
		text = text[:pieceBoundary(text, 2<<20)]
	}
	for _, name := range []string{O200kBase, CL100kBase} {
		got, want := mustEncoder(t, name).Encode(text), refEncoding(t, name).EncodeOrdinary(text)
		if !slices.Equal(got, want) {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Errorf("%s: %d tokens, tiktoken-go %d; first difference at token %d", name, len(got), len(want), i)
		}
		if n := CountParallel(mustEncoder(t, name), text, 4); n != len(want) {
			t.Errorf("%s: CountParallel = %d, tiktoken-go %d tokens", name, n, len(want))
		}
		t.Logf("%s: %d bytes, %d tokens", name, len(text), len(want))
	}
}
