package tokenizer

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// CountParallel returns c.Count(text), counting a large text on up to
// workers goroutines (runtime.GOMAXPROCS(0) if workers <= 0). The text is
// cut into chunks only where both encodings' split patterns are certain to
// end a piece, whatever comes before. So the chunks' counts add up to
// exactly c.Count(text). Texts under a few hundred kB, and counters other
// than O200kBase and CL100kBase, are counted in one c.Count call.
func CountParallel(c Counter, text string, workers int) int {
	e, ok := c.(*bpe)
	if !ok {
		return c.Count(text)
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return e.countParallel(text, workers, minParallelChunk)
}

// minParallelChunk is the smallest chunk CountParallel hands a goroutine.
const minParallelChunk = 128 << 10

// countParallel counts text in chunks of at least minChunk bytes on up to
// workers goroutines.
func (e *bpe) countParallel(text string, workers, minChunk int) int {
	text = validText(text)
	if workers <= 1 || len(text) < 2*minChunk {
		return e.Count(text)
	}
	v := e.vocab()
	// Four chunks a worker balance the load when some chunks are slower
	// (non-Latin text, long pieces) than others.
	chunks := chunkText(text, max(minChunk, len(text)/(4*workers)))
	var next atomic.Int64
	var total atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, len(chunks)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := getScratch()
			n := 0
			for {
				k := int(next.Add(1)) - 1
				if k >= len(chunks) {
					break
				}
				n += v.count(e.split, sc, chunks[k])
			}
			putScratch(sc)
			total.Add(int64(n))
		}()
	}
	wg.Wait()
	return int(total.Load())
}

// chunkText cuts s into chunks of about size bytes, each ending at a piece
// boundary (see pieceBoundary). A chunk grows past size until it finds
// one.
func chunkText(s string, size int) []string {
	var chunks []string
	for len(s) > 0 {
		end := len(s)
		if size < len(s) {
			if p := pieceBoundary(s, size); p > 0 {
				end = p
			}
		}
		chunks = append(chunks, s[:end])
		s = s[end:]
	}
	return chunks
}

// pieceBoundary returns the first p >= from (p > 0) at which a piece of
// both split patterns begins, whatever text precedes. It returns -1 if
// there is none. Such a p is
//
//   - an ASCII space after an ASCII letter or digit: no alternative of
//     either pattern matches a letter or digit followed by a space (words
//     and contractions hold letters and marks, numbers digits, punctuation
//     runs neither letters nor digits, whitespace runs only whitespace);
//   - an ASCII letter or digit after "\n": a newline ends a whitespace run
//     or a punctuation run's [\r\n]* or [\r\n/]* tail, and the optional
//     first rune of a word, [^\r\n\p{L}\p{N}], is never a newline.
//
// Either way the piece that holds byte p-1 ends at p.
func pieceBoundary(s string, from int) int {
	for p := max(from, 1); p < len(s); p++ {
		a, b := s[p-1], s[p]
		if b == ' ' && isASCIIAlnum(a) || a == '\n' && isASCIIAlnum(b) {
			return p
		}
	}
	return -1
}

func isASCIIAlnum(b byte) bool {
	return b-'0' < 10 || (b|0x20)-'a' < 26
}
