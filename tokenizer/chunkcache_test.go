package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// A ChunkCache counts exactly as its counter does: whole texts, ever
// shorter truncations of one text with a note appended (what fitting a
// step to a budget counts), texts of invalid UTF-8, and texts with no
// piece boundary at all; and it counts a truncation's shared chunks once.
func TestChunkCache(t *testing.T) {
	text := corpusText()[:64<<10]
	stress := strings.Join(stressCorpus(stressSeed+5, 300), "")
	r := rand.New(rand.NewPCG(5, 5))
	for _, name := range []string{O200kBase, CL100kBase} {
		c := mustEncoder(t, name)
		cc := ChunkCache(c)
		if cc.Name() != name {
			t.Errorf("Name = %q, want %q", cc.Name(), name)
		}
		for _, s := range []string{text, stress, "", "x", strings.Repeat("=", 5000), "ab \xff\xfe cd " + text[:3000]} {
			if got, want := cc.Count(s), c.Count(s); got != want {
				t.Errorf("%s: Count(%d bytes) = %d, want %d", name, len(s), got, want)
			}
			// Truncations, longest first, counted through one cache.
			for limit := len(s); limit > 0; limit -= 1 + r.IntN(len(s)/20+1) {
				trunc := s[:limit] + "\n…[truncated " + "123 bytes]"
				if got, want := cc.Count(trunc), c.Count(trunc); got != want {
					t.Fatalf("%s: Count(s[:%d] + note) = %d, want %d", name, limit, got, want)
				}
			}
		}
	}
	if h := NewHeuristic(); ChunkCache(h) != h {
		t.Error("ChunkCache(heuristic) is not the heuristic counter itself")
	}
}

// Counting a truncation through a cache that holds the whole text
// tokenizes about one chunk.
func TestChunkCacheReuses(t *testing.T) {
	c := mustEncoder(t, O200kBase)
	text := corpusText()[:32<<10]
	cc := ChunkCache(c).(*chunkCache)
	cc.Count(text)
	before := len(cc.counts)
	cc.Count(text[:len(text)/2] + "\n…[truncated 16384 bytes]")
	if added := len(cc.counts) - before; added > 2 {
		t.Errorf("counting a truncation added %d chunks to the cache, want at most 2", added)
	}
}

// BenchmarkFitProbes measures counting 12 truncations of a 16 kB tool
// output, as fitting it to a budget does, with and without a ChunkCache.
func BenchmarkFitProbes(b *testing.B) {
	c := mustEncoder(b, O200kBase)
	text := corpusText()[:16<<10]
	limits := []int{8000, 4000, 6000, 5000, 5500, 5200, 5300, 5250, 5270, 5260, 5265, 5263}
	for _, cached := range []bool{false, true} {
		name := "plain"
		if cached {
			name = "chunk-cache"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				var cc Counter = c
				if cached {
					cc = ChunkCache(c)
				}
				n := cc.Count(text)
				for _, l := range limits {
					n += cc.Count(text[:l] + "\n…[truncated 1 bytes]")
				}
				if n == 0 {
					b.Fatal("no tokens")
				}
			}
		})
	}
}
