package inspector

import (
	"sync"

	"github.com/agentmem/agentmem/tokenizer"
)

// pageCounter is the token counter of one page: it counts as its tokenizer
// does, and tokenizes each text once. A page counts the same texts many
// times over, and tokenizing is most of a page's cost. So it remembers the
// count of every text it has counted. The chart of context sizes fits the
// context before up to MaxChartCalls calls, each over the steps before it.
// "What the model saw" counts the context, then its messages, then the
// steps of its log. It tokenizes through tokenizer.ChunkCache, so that the
// ever shorter truncations of a text tried to fill a budget share the
// counts of its chunks.
//
// It is for one request: it keeps every text it has counted.
type pageCounter struct {
	mu     sync.Mutex
	c      tokenizer.Counter // a tokenizer.ChunkCache
	counts map[string]int
	// read is the number of bytes tokenized. Once it reaches limit (when
	// limit is not 0), texts not counted yet are estimated rather than
	// tokenized, and over is set: the caller drops what it counted.
	read, limit int
	over        bool
}

func newPageCounter(c tokenizer.Counter) *pageCounter {
	return &pageCounter{c: tokenizer.ChunkCache(c), counts: map[string]int{}}
}

// asPageCounter returns c if it is a page's counter already, or a new one
// over c.
func asPageCounter(c tokenizer.Counter) *pageCounter {
	if pc, ok := c.(*pageCounter); ok {
		return pc
	}
	return newPageCounter(c)
}

// Name implements tokenizer.Counter.
func (pc *pageCounter) Name() string { return pc.c.Name() }

// Count implements tokenizer.Counter.
func (pc *pageCounter) Count(text string) int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if n, ok := pc.counts[text]; ok {
		return n
	}
	if pc.limit > 0 && pc.read >= pc.limit {
		// Past the limit: an estimate (the heuristic's), not remembered.
		pc.over = true
		return (len(text) + 3) / 4
	}
	n := pc.c.Count(text)
	pc.read += len(text)
	pc.counts[text] = n
	return n
}

// limitTo makes the counter tokenize at most n more bytes (see over);
// 0 lifts the limit.
func (pc *pageCounter) limitTo(n int) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.limit, pc.over = 0, false
	if n > 0 {
		pc.limit = pc.read + n
	}
}

// exceeded reports whether a text was estimated, not tokenized, because
// the limit was reached.
func (pc *pageCounter) exceeded() bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.over
}
