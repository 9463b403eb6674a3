package tokenizer

import (
	"slices"
	"testing"
)

// FuzzO200k and FuzzCL100k check one encoding each on arbitrary input: the
// token IDs equal tiktoken-go's (for inputs short enough for its quadratic
// merge), the pieces equal regexp2's split with tiktoken's pattern,
// Count(s) == len(Encode(s)), Decode(Encode(s)) is s (with each byte of
// invalid UTF-8 replaced by U+FFFD), counting in chunks cut at
// pieceBoundary adds up to Count (in parallel and through a ChunkCache),
// and nothing panics. Seeds are in
// testdata/fuzz/FuzzO200k and testdata/fuzz/FuzzCL100k; run one with
//
//	go test -run '^$' -fuzz '^FuzzO200k$' -fuzztime 8m ./tokenizer/
func FuzzO200k(f *testing.F) { fuzzEncoding(f, O200kBase) }

// FuzzCL100k is FuzzO200k for cl100k_base.
func FuzzCL100k(f *testing.F) { fuzzEncoding(f, CL100kBase) }

func fuzzEncoding(f *testing.F, name string) {
	for _, s := range goldenCases {
		f.Add(s)
	}
	for _, s := range stressCorpus(stressSeed+1, 200) {
		f.Add(s)
	}
	e := mustEncoder(f, name)
	ref := refEncoding(f, name)
	f.Fuzz(func(t *testing.T, s string) {
		ids := e.Encode(s)
		if n := e.Count(s); n != len(ids) {
			t.Fatalf("Count = %d, len(Encode) = %d", n, len(ids))
		}
		valid := validText(s)
		if got := e.Decode(ids); got != valid {
			t.Fatalf("Decode(Encode(s)) = %q, want %q", got, valid)
		}
		if len(s) <= refMaxLen {
			if want := ref.EncodeOrdinary(s); !slices.Equal(ids, want) {
				t.Fatalf("Encode = %v, tiktoken-go: %v", ids, want)
			}
			checkSplit(t, name, s)
		}
		if n := e.(*bpe).countParallel(s, 3, 1); n != len(ids) {
			t.Fatalf("countParallel with 1-byte chunks = %d, Count = %d", n, len(ids))
		}
		cc := &chunkCache{e: e.(*bpe), size: 1, counts: map[string]int{}}
		for range 2 { // counted, then from the cache
			if n := cc.Count(s); n != len(ids) {
				t.Fatalf("a ChunkCache with 1-byte chunks counts %d, Count = %d", n, len(ids))
			}
		}
	})
}
