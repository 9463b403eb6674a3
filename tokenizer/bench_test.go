package tokenizer

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// benchSize is the size of the throughput benchmarks' text.
const benchSize = 10 << 20

// benchText is about 10 MiB of mixed prose, dialogue and Go source (a
// third each by document count), generated from a fixed seed like the test
// corpus. `go test -run TestWriteBenchText` writes it to a file for
// agentmem-bench tokenize.
var benchText = sync.OnceValue(func() string {
	r := &rng{s: 0x62656e6368} // "bench"
	gens := []func(*rng) string{genProse, genDialogue, genGo}
	var b strings.Builder
	for b.Len() < benchSize {
		b.WriteString(pick(r, gens)(r))
		b.WriteString("\n\n")
	}
	return b.String()
})

// genDialogue is a chat transcript: turns of a user and an assistant, with
// contractions, quotes, lists and the odd code span.
func genDialogue(r *rng) string {
	var b strings.Builder
	openers := []string{"I'm not sure", "Don't worry", "You'll need to", "We've seen that", "It's likely",
		"Can't you", "That's right", "Let's check", "I'd say", "They're saying", "Here's what I found"}
	for turns := 2 + r.intn(8); turns > 0; turns-- {
		fmt.Fprintf(&b, "User: %s, %s\n", pick(r, openers), strings.ToLower(genSentence(r)))
		b.WriteString("Assistant: ")
		for k := 1 + r.intn(4); k > 0; k-- {
			switch r.intn(5) {
			case 0:
				fmt.Fprintf(&b, "\n- %s", genSentence(r))
			case 1:
				fmt.Fprintf(&b, "Try `%s(%d)`: \"%s\" ", genIdent(r), r.intn(100), genSentence(r))
			default:
				fmt.Fprintf(&b, "%s %s ", pick(r, openers), strings.ToLower(genSentence(r)))
			}
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

// BenchmarkMixed counts benchText in one call per iteration with this
// package's encodings, alone and with CountParallel (run with -cpu 1,2),
// and with github.com/pkoukk/tiktoken-go, the reference, in the same run:
//
//	go test -run '^$' -bench Mixed -cpu 1,2 -benchtime 3x -count 3 ./tokenizer/
func BenchmarkMixed(b *testing.B) {
	text := benchText()
	for _, name := range []string{O200kBase, CL100kBase} {
		c := mustEncoder(b, name)
		c.Count("warm up")
		b.Run(name+"/agentmem", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				c.Count(text)
			}
		})
		b.Run(name+"/agentmem-parallel", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				CountParallel(c, text, 0)
			}
		})
		b.Run(name+"/agentmem-encode", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				_ = c.Encode(text)
			}
		})
		b.Run(name+"/tiktoken-go", func(b *testing.B) {
			ref := refEncoding(b, name)
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				_ = len(ref.EncodeOrdinary(text))
			}
		})
	}
}

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
		{O200kBase, func() *bpe { return newBPE(O200kBase, nextO200k, o200kSpecial, o200kRanks) }},
		{CL100kBase, func() *bpe { return newBPE(CL100kBase, nextCL100k, cl100kSpecial, cl100kRanks) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tc.new().Count("hello world")
			}
		})
	}
}

// TestWriteBenchText writes benchText to $TOKENIZER_BENCH_TEXT, if set, for
// agentmem-bench tokenize:
//
//	TOKENIZER_BENCH_TEXT=/tmp/mixed10m.txt go test -run TestWriteBenchText ./tokenizer/
func TestWriteBenchText(t *testing.T) {
	path := os.Getenv("TOKENIZER_BENCH_TEXT")
	if path == "" {
		t.Skip("TOKENIZER_BENCH_TEXT is not set")
	}
	if err := os.WriteFile(path, []byte(benchText()), 0o644); err != nil {
		t.Fatal(err)
	}
}
