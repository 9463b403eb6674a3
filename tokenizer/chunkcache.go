package tokenizer

// ChunkCache returns a Counter that counts exactly as c does and remembers
// the counts of the chunks it cuts texts into. It cuts at the piece
// boundaries CountParallel cuts at, about every 256 bytes. So counting
// many texts that share long prefixes counts each shared chunk once.
// Fitting a step to a budget by counting ever shorter truncations of its
// tool output is such a task: each count then tokenizes about a chunk, not
// the whole text again.
//
// The cache is for one such task: it is not safe for concurrent use, and
// it keeps every chunk it has seen until it is dropped. For counters other
// than O200kBase and CL100kBase (whose counts it cannot cut) it returns c.
func ChunkCache(c Counter) Counter {
	e, ok := c.(*bpe)
	if !ok {
		return c
	}
	return &chunkCache{e: e, size: cacheChunk, counts: map[string]int{}}
}

// cacheChunk is the size past which ChunkCache cuts a text, at the next
// piece boundary.
const cacheChunk = 256

type chunkCache struct {
	e      *bpe
	size   int // cacheChunk; smaller in tests
	counts map[string]int
}

func (cc *chunkCache) Name() string { return cc.e.Name() }

// Count is the sum of the counts of the text's chunks: exact, since each
// chunk ends where a piece ends whatever follows (see pieceBoundary).
func (cc *chunkCache) Count(text string) int {
	text = validText(text)
	if len(text) < 2*cc.size {
		return cc.e.Count(text)
	}
	var v *vocab
	var sc *scratch
	n := 0
	for len(text) > 0 {
		end := len(text)
		if cc.size < len(text) {
			if p := pieceBoundary(text, cc.size); p > 0 {
				end = p
			}
		}
		chunk := text[:end]
		text = text[end:]
		k, ok := cc.counts[chunk]
		if !ok {
			if v == nil {
				v, sc = cc.e.vocab(), getScratch()
				defer putScratch(sc)
			}
			k = v.count(cc.e.split, sc, chunk)
			cc.counts[chunk] = k
		}
		n += k
	}
	return n
}
