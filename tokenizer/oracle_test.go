package tokenizer

import (
	"slices"
	"sync"
	"testing"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// tiktoken-go, the reference this package is checked against besides the
// golden IDs of OpenAI's tiktoken. It shares our rank files and patterns but
// has its own pre-tokenisation loop and merge, and it handles invalid UTF-8
// the same way (U+FFFD per byte), which tiktoken cannot be asked about.
var refEncodings = sync.OnceValues(func() (map[string]*tiktoken.Tiktoken, error) {
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	m := map[string]*tiktoken.Tiktoken{}
	for _, name := range []string{O200kBase, CL100kBase} {
		tk, err := tiktoken.GetEncoding(name)
		if err != nil {
			return nil, err
		}
		m[name] = tk
	}
	return m, nil
})

func refEncoding(t testing.TB, name string) *tiktoken.Tiktoken {
	t.Helper()
	m, err := refEncodings()
	if err != nil {
		t.Fatal(err)
	}
	return m[name]
}

// refMaxLen bounds the inputs given to tiktoken-go, whose merge is
// quadratic in the length of a piece.
const refMaxLen = 4096

func TestMatchesTiktokenGo(t *testing.T) {
	// TestGoldenTiktoken covers the whole corpus; a sample is enough here.
	var docs []string
	step := 4
	if testing.Short() || raceEnabled {
		step = 32
	}
	for i, d := range corpusDocs() {
		if i%step == 0 {
			docs = append(docs, d)
		}
	}
	extra := append([]string{}, goldenCases...)
	extra = append(extra, "\xff", "a\xffb", "\xed\xa0\x80", "<|endoftext|>\xfe", "\xc3\x28 x \xe2\x82",
		string(make([]byte, 3000)), // one long piece of NULs
	)
	for _, name := range []string{O200kBase, CL100kBase} {
		e, ref := mustEncoder(t, name), refEncoding(t, name)
		for _, s := range append(extra, docs...) {
			if got, want := e.Encode(s), ref.EncodeOrdinary(s); !slices.Equal(got, want) {
				t.Errorf("%s Encode(%.80q):\n got %v\nwant %v", name, s, got, want)
			}
		}
	}
}
