package tokenizer

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

func mustEncoder(t testing.TB, name string) Encoder {
	t.Helper()
	e, err := GetEncoder(name)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestKnownIDs(t *testing.T) {
	for _, tc := range []struct {
		enc, text string
		ids       []int
	}{
		{CL100kBase, "hello world", []int{15339, 1917}},
		{CL100kBase, "tiktoken is great!", []int{83, 1609, 5963, 374, 2294, 0}},
		{O200kBase, "hello world", []int{24912, 2375}},
		{O200kBase, "tiktoken is great!", []int{83, 8251, 2488, 382, 2212, 0}},
	} {
		e := mustEncoder(t, tc.enc)
		if got := e.Encode(tc.text); !slices.Equal(got, tc.ids) {
			t.Errorf("%s Encode(%q) = %v, want %v", tc.enc, tc.text, got, tc.ids)
		}
		if got := e.Count(tc.text); got != len(tc.ids) {
			t.Errorf("%s Count(%q) = %d, want %d", tc.enc, tc.text, got, len(tc.ids))
		}
		if got := e.Decode(tc.ids); got != tc.text {
			t.Errorf("%s Decode(%v) = %q, want %q", tc.enc, tc.ids, got, tc.text)
		}
	}
}

// TestAssetsAreOfficial pins the embedded rank files to the SHA-256 sums
// that tiktoken (tiktoken_ext/openai_public.py) checks its downloads
// against.
func TestAssetsAreOfficial(t *testing.T) {
	for file, want := range map[string]string{
		"o200k_base.tiktoken":  "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
		"cl100k_base.tiktoken": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
	} {
		b, err := assets.Assets.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%s: sha256 %s, want %s", file, got, want)
		}
	}
}

func TestGet(t *testing.T) {
	if got, want := Names(), []string{CL100kBase, Heuristic, O200kBase}; !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, name := range Names() {
		c, err := Get(name)
		if err != nil {
			t.Fatalf("Get(%q): %v", name, err)
		}
		if c.Name() != name {
			t.Errorf("Get(%q).Name() = %q", name, c.Name())
		}
		if c2, _ := Get(name); c2 != c {
			t.Errorf("Get(%q) returned two different counters", name)
		}
	}
	names := Names()
	names[0] = "mutated"
	if Names()[0] != CL100kBase {
		t.Error("Names returns a shared slice")
	}
}

// TestDefault: Default is the counter Get(O200kBase) returns.
func TestDefault(t *testing.T) {
	c, err := Get(O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	if Default() != c {
		t.Errorf("Default() = %q, want the counter of Get(%q)", Default().Name(), O200kBase)
	}
}

func TestGetUnknown(t *testing.T) {
	for _, name := range []string{"", "gpt2", "O200K_BASE", "o200k_base ", "p50k_base"} {
		c, err := Get(name)
		if c != nil || !errors.Is(err, ErrUnknownEncoding) {
			t.Fatalf("Get(%q) = %v, %v; want nil, ErrUnknownEncoding", name, c, err)
		}
		msg := err.Error()
		for _, want := range []string{`"` + name + `"`, O200kBase, CL100kBase, Heuristic} {
			if !strings.Contains(msg, want) {
				t.Errorf("Get(%q) error %q does not mention %s", name, msg, want)
			}
		}
	}
}

func TestGetEncoder(t *testing.T) {
	for _, name := range []string{O200kBase, CL100kBase} {
		e, err := GetEncoder(name)
		if err != nil || e.Name() != name {
			t.Fatalf("GetEncoder(%q) = %v, %v", name, e, err)
		}
		if c, _ := Get(name); c != Counter(e) {
			t.Errorf("Get and GetEncoder(%q) return different values", name)
		}
	}
	for _, name := range []string{Heuristic, "nope"} {
		e, err := GetEncoder(name)
		if e != nil || !errors.Is(err, ErrUnknownEncoding) || !strings.Contains(err.Error(), `"`+name+`"`) {
			t.Errorf("GetEncoder(%q) = %v, %v; want nil and ErrUnknownEncoding naming it", name, e, err)
		}
	}
}

func TestHeuristic(t *testing.T) {
	h := NewHeuristic()
	if h.Name() != Heuristic {
		t.Errorf("Name() = %q", h.Name())
	}
	if c, _ := Get(Heuristic); c != h {
		t.Error("Get(Heuristic) differs from NewHeuristic()")
	}
	for _, tc := range []struct {
		text string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abc", 1},
		{"abcd", 1},
		{"abcde", 2},
		{"hello world", 3},
		{"12345678", 2},
		{"héllo", 2},            // 5 runes, 6 bytes
		{"日本語", 1},              // 3 runes, 9 bytes
		{"👩‍💻", 1},              // 3 runes
		{"\xff\xfe\xfd\xfc", 1}, // invalid bytes count one each
		{"\xff\xfe\xfd\xfc\xfb", 2},
		{strings.Repeat("x", 4000), 1000},
		{strings.Repeat("é", 4001), 1001},
	} {
		if got := h.Count(tc.text); got != tc.want {
			t.Errorf("Count(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
}

func TestSpecialTokensAreText(t *testing.T) {
	for _, tc := range []struct {
		enc      string
		specials map[string]int
	}{{O200kBase, o200kSpecial}, {CL100kBase, cl100kSpecial}} {
		e := mustEncoder(t, tc.enc)
		for text, id := range tc.specials {
			for _, s := range []string{text, "a" + text + "b", text + text} {
				ids := e.Encode(s)
				if slices.Contains(ids, id) || len(ids) < 2 {
					t.Errorf("%s Encode(%q) = %v: want it encoded as text, without %d", tc.enc, s, ids, id)
				}
				if e.Count(s) != len(ids) || e.Decode(ids) != s {
					t.Errorf("%s: %q: Count %d, len %d, Decode %q", tc.enc, s, e.Count(s), len(ids), e.Decode(ids))
				}
			}
			// The special token's own ID still decodes to its text.
			if got := e.Decode([]int{id}); got != text {
				t.Errorf("%s Decode([%d]) = %q, want %q", tc.enc, id, got, text)
			}
		}
	}
}

func TestDecodeUnknownIDs(t *testing.T) {
	e := mustEncoder(t, O200kBase)
	hello := e.Encode("hello")
	ids := append([]int{-1, 199998, 200000, 200017, 1 << 40}, hello...)
	ids = append(ids, -1<<40)
	if got := e.Decode(ids); got != "hello" {
		t.Errorf("Decode(%v) = %q, want %q", ids, got, "hello")
	}
	if got := e.Decode(nil); got != "" {
		t.Errorf("Decode(nil) = %q", got)
	}
}

// checkText checks the invariants of every encoder on s.
func checkText(t testing.TB, e Encoder, s string) []int {
	t.Helper()
	ids := e.Encode(s)
	if n := e.Count(s); n != len(ids) {
		t.Fatalf("%s: Count(%.80q) = %d, len(Encode) = %d", e.Name(), s, n, len(ids))
	}
	want := s
	if !utf8.ValidString(s) {
		want = string([]rune(s)) // each invalid byte is U+FFFD
	}
	if got := e.Decode(ids); got != want {
		t.Fatalf("%s: Decode(Encode(%.80q)) = %.80q", e.Name(), s, got)
	}
	if len(s) > 0 && len(ids) == 0 {
		t.Fatalf("%s: Encode(%.80q) is empty", e.Name(), s)
	}
	return ids
}

func TestInvariantsOnCorpus(t *testing.T) {
	docs := corpusDocs()
	if testing.Short() || raceEnabled {
		docs = docs[:len(docs)/8]
	}
	for _, name := range []string{O200kBase, CL100kBase} {
		e := mustEncoder(t, name)
		sum := 0
		for _, d := range docs {
			sum += len(checkText(t, e, d))
		}
		// Counts add up only where both sides split the text alike;
		// "\n\n" between documents need not be such a place, but the total
		// stays within a token per join.
		whole := e.Count(strings.Join(docs, "\n\n"))
		if whole > sum+len(docs) || whole < sum-len(docs) {
			t.Errorf("%s: joined documents %d tokens, separately %d", name, whole, sum)
		}
	}
}

func TestInvalidUTF8(t *testing.T) {
	cases := []string{
		"\xff", "\xfe\xff", "a\xffb", "\xc3", "\xc3\x28", "\xe2\x82", "\xf0\x9f\x98",
		"\xed\xa0\x80",             // UTF-16 surrogate
		"\xf4\x90\x80\x80",         // above U+10FFFF
		"\xc0\xaf",                 // overlong
		"hello \x80world\x80\x80 ", // stray continuation bytes
		"<|endoftext|>\xff<|endoftext|>",
		strings.Repeat("\xff", 3000),
		strings.Repeat("ab\xcd", 1000),
		string([]byte{0xe6, 0x97, 0xa5, 0xe6, 0x97}), // truncated 日本
	}
	for _, name := range []string{O200kBase, CL100kBase} {
		e := mustEncoder(t, name)
		for _, s := range cases {
			checkText(t, e, s)
		}
	}
}

// TestLongPieces checks that a long single piece (a run the pattern cannot
// split) takes near-linear time: tiktoken's merge loop is quadratic in it.
func TestLongPieces(t *testing.T) {
	n := 1 << 18
	if testing.Short() || raceEnabled {
		n = 1 << 15
	}
	for _, name := range []string{O200kBase, CL100kBase} {
		e := mustEncoder(t, name)
		e.Count("warm up")
		for _, unit := range []string{"=", "a", "\xff", " ", "🙂", "日"} {
			s := strings.Repeat(unit, n/len(unit))
			start := time.Now()
			ids := checkText(t, e, s)
			if d := time.Since(start); d > 30*time.Second { // quadratic: hours
				t.Errorf("%s: %d × %q took %v", name, len(s)/len(unit), unit, d)
			}
			if len(ids) >= len(s) {
				t.Errorf("%s: %d × %q: %d tokens, nothing merged", name, len(s)/len(unit), unit, len(ids))
			}
		}
	}
}

// TestMergeHeapMatchesLinear compares the two merge algorithms on the
// same pieces: substrings of the corpus and of a run of invalid bytes.
func TestMergeHeapMatchesLinear(t *testing.T) {
	text := corpusText()
	r := &rng{s: 42}
	for _, name := range []string{O200kBase, CL100kBase} {
		e, _ := GetEncoder(name)
		v := e.(*bpe).vocab()
		sc := new(scratch)
		iters := 20000
		if raceEnabled || testing.Short() {
			iters = 4000
		}
		for i := 0; i < iters; i++ {
			n := 2 + r.intn(linearMergeMax-1)
			start := r.intn(len(text) - n)
			piece := text[start : start+n]
			if i%10 == 0 {
				piece = strings.Repeat(piece[:min(n, 1+r.intn(3))], n)[:n]
			}
			lin := slices.Clone(mergeLinear(v, sc, piece))
			heap := mergeHeap(v, sc, piece)
			if !slices.Equal(lin, heap) {
				t.Fatalf("%s: piece %q: linear %v, heap %v", name, piece, lin, heap)
			}
		}
	}
}

// TestPieceCache counts texts with one scratch, so through one piece cache,
// alternating the two encodings and counting each text twice, against the
// number of tokens Encode gives, which uses no piece cache. Pieces that
// pack alike but differ in length (trailing NUL bytes) must not share a
// count.
func TestPieceCache(t *testing.T) {
	texts := append([]string{
		"ab", "ab\x00", "ab\x00\x00", "\x00", "\x00\x00\x00\x00\x00\x00\x00\x00\x00",
		" a\x00 a\x00\x00 a", "x\x00\x00\x00\x00\x00\x00\x00 x",
	}, corpusDocs()...)
	if raceEnabled || testing.Short() {
		texts = texts[:64]
	}
	var encs []*bpe
	for _, name := range []string{O200kBase, CL100kBase} {
		e, _ := GetEncoder(name)
		encs = append(encs, e.(*bpe))
	}
	sc := new(scratch)
	for _, text := range texts {
		for _, e := range []*bpe{encs[0], encs[1], encs[0], encs[1]} {
			want := len(e.Encode(text))
			if got := e.vocab().count(e.split, sc, text); got != want {
				t.Fatalf("%s: %q: count %d, Encode %d tokens", e.name, text, got, want)
			}
		}
	}
}

// TestConcurrentFirstUse loads fresh encodings from many goroutines at once;
// run with -race.
func TestConcurrentFirstUse(t *testing.T) {
	docs := corpusDocs()[:64]
	encs := []*bpe{
		newBPE(O200kBase, nextO200k, o200kSpecial, o200kRanks),
		newBPE(CL100kBase, nextCL100k, cl100kSpecial, cl100kRanks),
	}
	want := make([][]int, len(encs))
	for i, e := range encs {
		for _, d := range docs {
			want[i] = append(want[i], mustEncoder(t, e.name).Count(d))
		}
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range docs {
				i := (g + k) % len(encs)
				e := encs[i]
				d := docs[(g*7+k)%len(docs)]
				if k%3 == 0 {
					ids := e.Encode(d)
					if e.Decode(ids) != d {
						t.Errorf("goroutine %d: round trip failed", g)
						return
					}
				}
				if got := e.Count(d); got != want[i][(g*7+k)%len(docs)] {
					t.Errorf("goroutine %d: %s Count = %d, want %d", g, e.name, got, want[i][(g*7+k)%len(docs)])
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestLoadErrors(t *testing.T) {
	var allBytes strings.Builder
	for b := 0; b < 256; b++ {
		fmt.Fprintf(&allBytes, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(b)}), b)
	}
	file := func(body string, want int) rankSource {
		return func() (io.Reader, int, int, error) { return strings.NewReader(body), len(body), want, nil }
	}
	for name, src := range map[string]rankSource{
		"error":    func() (io.Reader, int, int, error) { return nil, 0, 0, errors.New("boom") },
		"read":     func() (io.Reader, int, int, error) { return iotest.ErrReader(errors.New("boom")), 10, 256, nil },
		"long":     file(strings.Repeat("QUFB", 20<<10)+" 0\n", 1),
		"nonl":     file(allBytes.String()+"YWI=", 257),
		"count":    file(allBytes.String(), 300),
		"byte":     file("YQ== 0\n", 1),
		"special":  file(allBytes.String(), 256),
		"repeated": file(allBytes.String()+"YQ== 0\n", 256),
		"rank":     file(allBytes.String()+"YWI= 999\n", 257),
		"base64":   file(allBytes.String()+"!!!! 256\n", 257),
		"line":     file(allBytes.String()+"YWI=\n", 257),
		"twice":    file(allBytes.String()+"YQ== 256\n", 257),
	} {
		special := map[string]int{"<|x|>": 300}
		if name == "special" {
			special = map[string]int{"<|x|>": 255}
		}
		e := newBPE("test", nextCL100k, special, src)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic on a broken encoding", name)
				}
			}()
			e.Count("x")
		}()
	}
	// The same file with nothing wrong loads.
	e := newBPE("test", nextCL100k, map[string]int{"<|x|>": 300}, file(allBytes.String()+"YWI= 256", 257)) // no final newline
	if got := e.Encode("ab a"); !slices.Equal(got, []int{256, ' ', 'a'}) {
		t.Errorf("Encode with a tiny vocabulary = %v", got)
	}
	if got := e.Decode([]int{256, 300, 299}); got != "ab<|x|>" {
		t.Errorf("Decode with a tiny vocabulary = %q", got)
	}
}
