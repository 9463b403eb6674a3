package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
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

// coldStep is the size of the texts BenchmarkCountCold counts, about an
// agent's step, and coldTotal the bytes it counts per iteration.
const (
	coldStep  = 2 << 10
	coldTotal = 256 << 10
)

// coldTexts returns the texts of BenchmarkCountCold: "corpus" is the test
// corpus; "repo" is this repository's own documentation, OpenAPI document
// and Go source (prose, JSON and code as an agent reads them); "unique"
// is random lowercase words, nearly every piece new.
func coldTexts(b *testing.B) map[string][]string {
	var corpus []string
	n := 0
	for _, d := range corpusDocs() {
		if n >= coldTotal {
			break
		}
		corpus = append(corpus, d)
		n += len(d)
	}
	var repo strings.Builder
	for _, pat := range []string{"../docs/*.md", "../server/openapi.json", "../*.go"} {
		files, err := filepath.Glob(pat)
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			repo.Write(data)
		}
	}
	r := &rng{s: 0x756e69717565} // "unique"
	var unique strings.Builder
	for unique.Len() < coldTotal {
		unique.WriteByte(' ')
		for k := 4 + r.intn(6); k > 0; k-- {
			unique.WriteByte(byte('a' + r.intn(26)))
		}
	}
	return map[string][]string{
		"corpus": corpus,
		"repo":   cutSteps(repo.String()[:min(repo.Len(), coldTotal)]),
		"unique": cutSteps(unique.String()),
	}
}

// cutSteps cuts s into texts of about coldStep bytes, at line or word
// boundaries.
func cutSteps(s string) []string {
	var steps []string
	for len(s) > coldStep {
		i := coldStep + strings.IndexAny(s[coldStep:], "\n ")
		if i < coldStep {
			break
		}
		steps = append(steps, s[:i+1])
		s = s[i+1:]
	}
	return append(steps, s)
}

// evictBytes is the size of the buffer BenchmarkCountCold reads between
// two texts, larger than the last-level cache.
const evictBytes = 64 << 20

var evictSink uint64

// evict reads buf, a cache line of every 64 bytes.
func evict(buf []uint64) {
	var x uint64
	for i := 0; i < len(buf); i += 8 {
		x += buf[i]
	}
	evictSink += x
}

// countPlain is vocab.count without the piece cache, for comparison.
func countPlain(v *vocab, split splitter, sc *scratch, s string) int {
	n := 0
	for i := 0; i < len(s); {
		j := split(s, i)
		piece := s[i:j]
		i = j
		if len(piece) <= 1 || v.lookup(piece) != noRank {
			n++
			continue
		}
		n += len(merge(v, sc, piece))
	}
	return n
}

// BenchmarkCountCold counts texts of a few kB one at a time, as the server
// counts the steps it is given, with Count and with countPlain (no piece
// cache), alternately on each text, so that the load of the machine weighs
// on both alike. In "cold" it reads 64 MB before each count, outside the
// timings, so that the vocabulary is no longer in the CPU caches, as in
// the server, whose other work between two steps evicts it. "warm" counts
// the texts back to back. It reports the time and speed of Count over all
// the texts (ns/op, MB/s), the time of countPlain (plain-ns/op), and their
// ratio.
//
//	go test -run '^$' -bench CountCold -benchtime 5x -count 6 ./tokenizer/
func BenchmarkCountCold(b *testing.B) {
	texts := coldTexts(b)
	buf := make([]uint64, evictBytes/8)
	for i := range buf {
		buf[i] = uint64(i)
	}
	c := mustEncoder(b, O200kBase)
	c.Count("warm up")
	e := c.(*bpe)
	v := e.vocab()
	for _, name := range []string{"corpus", "repo", "unique"} {
		steps := texts[name]
		size := 0
		for _, s := range steps {
			size += len(s)
		}
		for _, cold := range []bool{false, true} {
			mode := "warm"
			if cold {
				mode = "cold"
			}
			b.Run(name+"/"+mode, func(b *testing.B) {
				sc := new(scratch)
				var cached, plain time.Duration
				n := 0
				for b.Loop() {
					n++
					b.StopTimer()
					for k, s := range steps {
						for pass := range 2 {
							if cold {
								evict(buf)
							}
							t0 := time.Now()
							if (k+pass)%2 == 0 {
								countPlain(v, e.split, sc, s)
								plain += time.Since(t0)
							} else {
								c.Count(s)
								cached += time.Since(t0)
							}
						}
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(cached.Nanoseconds())/float64(n), "ns/op")
				b.ReportMetric(float64(size*n)/1e6/cached.Seconds(), "MB/s")
				b.ReportMetric(float64(plain.Nanoseconds())/float64(n), "plain-ns/op")
				b.ReportMetric(float64(cached)/float64(plain), "ratio")
			})
		}
	}
}
