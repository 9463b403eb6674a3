package tokenizer

// Byte-pair merging of one piece. tiktoken repeatedly merges the adjacent
// pair of parts whose concatenation has the lowest rank, the leftmost one
// on ties. It stops when no adjacent pair is a token. Its loop scans every
// part for each merge, which is quadratic in the length of the piece;
// tiktoken-go does the same. mergeLinear is that loop, used for short
// pieces, where it is fastest. mergeHeap makes the same merges in the same
// order in O(n log n) for long pieces, where the quadratic loop would take
// seconds to minutes. A run of 100 kB of "=" is one such piece. Neither
// allocates once the caller's scratch has grown to the piece: both leave
// the piece's tokens in sc.out and return it.

// linearMergeMax is the longest piece, in bytes, merged by mergeLinear.
const linearMergeMax = 64

// scratch is the reusable working memory of one encoding call.
type scratch struct {
	// mergeLinear
	start [linearMergeMax + 1]uint8
	tok   [linearMergeMax]uint32
	pair  [linearMergeMax]uint32
	// mergeHeap
	next, prev []int32
	rank, htok []uint32
	heap       pairHeap
	// the last piece's tokens
	out []uint32
	// the piece cache of vocab.count, for hotVocab
	hot      [hotSlots]hotSlot
	hotVocab *vocab
}

// The piece cache of a scratch holds the token counts of pieces of 2 to 8
// bytes that were counted recently; longer pieces skip it. Counting a few
// kB, as the memory engine does for each step, finds the vocabulary's
// table evicted from the CPU caches by the work since the last count, and
// a piece costs a miss to memory for each lookup, several when it merges.
// The cache is a direct-mapped table of hotSlots slots, 32 kB: a hit costs
// at most one miss and no merge. A slot holds the piece's pack and length,
// which are exact for 8 bytes or fewer, so a hit compares no bytes. Each
// scratch is used by one goroutine at a time, so its cache needs no
// synchronisation. Its counts hold for one vocabulary, and count clears it
// for another.
const (
	hotBits  = 11
	hotSlots = 1 << hotBits
)

// hotSlot is a piece of the piece cache: key is its pack, and meta its
// length | its number of tokens << 8. meta 0 is an empty slot.
type hotSlot struct {
	key  uint64
	meta uint32
}

// maxPooledScratch is the longest piece whose scratch is kept for reuse.
const maxPooledScratch = 1 << 16

// grow makes room for mergeHeap on a piece of n bytes.
func (sc *scratch) grow(n int) {
	if cap(sc.next) < n {
		sc.next = make([]int32, n)
		sc.prev = make([]int32, n)
		sc.rank = make([]uint32, n)
		sc.htok = make([]uint32, n)
		sc.heap = make(pairHeap, 0, n)
		sc.out = make([]uint32, 0, n)
	}
}

// big reports whether sc holds more memory than is worth pooling.
func (sc *scratch) big() bool { return cap(sc.next) > maxPooledScratch }

// merge byte-pair encodes piece, which has at least two bytes and is no
// token, into sc.out.
func merge(v *vocab, sc *scratch, piece string) []uint32 {
	if len(piece) <= linearMergeMax {
		return mergeLinear(v, sc, piece)
	}
	return mergeHeap(v, sc, piece)
}

// mergeLinear is tiktoken's _byte_pair_merge for a piece of 2 to
// linearMergeMax bytes.
func mergeLinear(v *vocab, sc *scratch, piece string) []uint32 {
	n := len(piece)
	// Part k starts at start[k], and tok[k] is its token. pair[k] is the
	// rank of parts k and k+1 merged (noRank if there is no such token).
	start := sc.start[:n+1]
	tok := sc.tok[:n]
	pair := sc.pair[:n]
	for k := 0; k < n-1; k++ {
		start[k] = uint8(k)
		tok[k] = v.byteRank[piece[k]]
		pair[k] = v.pairRank[int(piece[k])|int(piece[k+1])<<8] - 1
	}
	start[n-1], start[n] = uint8(n-1), uint8(n)
	tok[n-1] = v.byteRank[piece[n-1]]
	pair[n-1] = noRank
	m := n // parts
	for {
		best, at := noRank, -1
		for k, r := range pair[:m-1] {
			if r < best {
				best, at = r, k
			}
		}
		if at < 0 {
			break
		}
		// Merge parts at and at+1.
		tok[at] = best
		copy(start[at+1:m], start[at+2:m+1])
		copy(tok[at+1:m-1], tok[at+2:m])
		copy(pair[at+1:m-1], pair[at+2:m])
		m--
		pair[at] = noRank
		if at+1 < m {
			pair[at] = v.lookup(piece[start[at]:start[at+2]])
		}
		if at > 0 {
			pair[at-1] = v.lookup(piece[start[at-1]:start[at+1]])
		}
	}
	sc.out = append(sc.out[:0], tok[:m]...)
	return sc.out
}

// mergeHeap makes the merges of mergeLinear with the parts in a linked
// list and the candidate pairs in a min-heap ordered by (rank, start).
//
// Heap entries are not removed when a pair changes; an entry is stale when
// its rank is no longer its part's rank. That test is exact. A part's pair
// only ever grows, and ranks are unique per byte string, so a part never
// has the same rank twice. A merged-away part has noRank, which is never
// pushed.
func mergeHeap(v *vocab, sc *scratch, piece string) []uint32 {
	n := len(piece)
	// Parts are named by their first byte. next[p] is the start of the part
	// after p (n for the last), and prev[p] of the one before (-1 for the
	// first). rank[p] is the rank of p merged with next[p], and tok[p] is
	// p's token.
	sc.grow(n)
	next, prev, rank, tok := sc.next[:n], sc.prev[:n], sc.rank[:n], sc.htok[:n]
	h := sc.heap[:0]
	pairRank := func(p int32) uint32 {
		q := next[p]
		if int(q) >= n {
			return noRank
		}
		return v.lookup(piece[p:next[q]])
	}
	for p := range int32(n) {
		next[p], prev[p] = p+1, p-1
		tok[p] = v.byteRank[piece[p]]
	}
	for p := range int32(n) {
		rank[p] = pairRank(p)
		if rank[p] != noRank {
			h = append(h, pair{rank[p], p})
		}
	}
	h.init()
	for len(h) > 0 {
		e := h.pop()
		p := e.start
		if rank[p] != e.rank {
			continue // stale
		}
		q := next[p]
		tok[p] = e.rank
		next[p] = next[q]
		if int(next[q]) < n {
			prev[next[q]] = p
		}
		rank[q] = noRank
		if rank[p] = pairRank(p); rank[p] != noRank {
			h.push(pair{rank[p], p})
		}
		if o := prev[p]; o >= 0 {
			if rank[o] = pairRank(o); rank[o] != noRank {
				h.push(pair{rank[o], o})
			}
		}
	}
	sc.heap = h[:0]
	out := sc.out[:0]
	for p := int32(0); int(p) < n; p = next[p] {
		out = append(out, tok[p])
	}
	sc.out = out
	return out
}

// pair is a candidate merge of the part at start with the part after it.
type pair struct {
	rank  uint32
	start int32
}

func (a pair) less(b pair) bool {
	return a.rank < b.rank || a.rank == b.rank && a.start < b.start
}

// pairHeap is a binary min-heap of pairs.
type pairHeap []pair

func (h pairHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *pairHeap) push(x pair) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !s[i].less(s[parent]) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

func (h *pairHeap) pop() pair {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	*h = s[:last]
	h.down(0)
	return top
}

func (h pairHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].less(h[l]) {
			m = r
		}
		if !h[m].less(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
