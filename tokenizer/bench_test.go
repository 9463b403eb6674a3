package tokenizer

import (
	"testing"
)

// BenchmarkCount counts the ~1 MiB mixed corpus (prose in several scripts,
// JSON, Go source, stack traces, logs) in one call per iteration.
func BenchmarkCount(b *testing.B) {
	text := corpusText()
	for _, name := range []string{O200kBase, CL100kBase, Heuristic} {
		b.Run(name, func(b *testing.B) {
			c, err := Get(name)
			if err != nil {
				b.Fatal(err)
			}
			c.Count("warm up") // load the ranks outside the timer
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				c.Count(text)
			}
		})
	}
}

// BenchmarkCountDocs counts the corpus document by document (a few kB
// each), as the memory engine counts messages.
func BenchmarkCountDocs(b *testing.B) {
	docs := corpusDocs()
	size := 0
	for _, d := range docs {
		size += len(d)
	}
	for _, name := range []string{O200kBase, CL100kBase} {
		b.Run(name, func(b *testing.B) {
			c := mustEncoder(b, name)
			c.Count("warm up")
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				for _, d := range docs {
					c.Count(d)
				}
			}
		})
	}
}

// BenchmarkCountTiktokenGo is BenchmarkCount for github.com/pkoukk/tiktoken-go,
// for comparison.
func BenchmarkCountTiktokenGo(b *testing.B) {
	text := corpusText()
	for _, name := range []string{O200kBase, CL100kBase} {
		b.Run(name, func(b *testing.B) {
			ref := refEncoding(b, name)
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				_ = len(ref.EncodeOrdinary(text))
			}
		})
	}
}

// BenchmarkLoad measures the one-time cost of an encoding's first use:
// parsing the embedded ranks, building the decoder, compiling the pattern.
func BenchmarkLoad(b *testing.B) {
	for _, tc := range []struct {
		name string
		new  func() *bpe
	}{
		{O200kBase, func() *bpe { return newBPE(O200kBase, o200kPattern, o200kSpecial, o200kRanks) }},
		{CL100kBase, func() *bpe { return newBPE(CL100kBase, cl100kPattern, cl100kSpecial, cl100kRanks) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tc.new().Count("hello world")
			}
		})
	}
}
