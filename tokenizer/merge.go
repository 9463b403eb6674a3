package tokenizer

import "math"

// Byte-pair merging of one piece. tiktoken repeatedly merges the adjacent
// pair of parts whose concatenation has the lowest rank, the leftmost one
// on ties, until no adjacent pair is a token. Its loop scans every part for
// each merge, which is quadratic in the length of the piece; tiktoken-go
// does the same. mergeLinear is that loop, used for short pieces, where it
// is fastest. mergeHeap makes the same merges in the same order in
// O(n log n) for long pieces (a run of 100 kB of "=" is one piece), where
// the quadratic loop would take seconds to minutes.

// noRank marks a pair that is not a token.
const noRank = math.MaxInt

// linearMergeMax is the longest piece, in bytes, merged by mergeLinear.
const linearMergeMax = 128

func rankOf(ranks map[string]int, s string) int {
	if r, ok := ranks[s]; ok {
		return r
	}
	return noRank
}

// mergeLinear is tiktoken's _byte_pair_merge. piece has 2 to
// linearMergeMax bytes.
func mergeLinear(dst []int, piece string, ranks map[string]int) []int {
	type part struct{ start, rank int }
	var buf [linearMergeMax + 1]part
	parts := buf[:0]

	// parts[i].rank is the rank of parts i and i+1 merged.
	minRank, minIdx := noRank, -1
	for i := 0; i < len(piece)-1; i++ {
		r := rankOf(ranks, piece[i:i+2])
		if r < minRank {
			minRank, minIdx = r, i
		}
		parts = append(parts, part{i, r})
	}
	parts = append(parts, part{len(piece) - 1, noRank}, part{len(piece), noRank})

	// pairRank is the rank of parts i and i+1 once parts i+1 and i+2 are
	// one, i.e. of the bytes from parts[i] to parts[i+3].
	pairRank := func(i int) int {
		if i+3 < len(parts) {
			return rankOf(ranks, piece[parts[i].start:parts[i+3].start])
		}
		return noRank
	}
	for minRank != noRank {
		i := minIdx
		if i > 0 {
			parts[i-1].rank = pairRank(i - 1)
		}
		parts[i].rank = pairRank(i)
		parts = append(parts[:i+1], parts[i+2:]...)

		minRank, minIdx = noRank, -1
		for j, p := range parts[:len(parts)-1] {
			if p.rank < minRank {
				minRank, minIdx = p.rank, j
			}
		}
	}
	for i := 0; i+1 < len(parts); i++ {
		dst = append(dst, ranks[piece[parts[i].start:parts[i+1].start]])
	}
	return dst
}

// mergeHeap makes the merges of mergeLinear with the parts in a linked list
// and the candidate pairs in a min-heap ordered by (rank, start).
//
// Heap entries are not removed when a pair changes; an entry is stale when
// its rank is no longer its part's rank. That test is exact: a part's pair
// only ever grows, ranks are unique per byte string, so a part never has
// the same rank twice, and a merged-away part has noRank, which is never
// pushed.
func mergeHeap(dst []int, piece string, ranks map[string]int) []int {
	n := len(piece)
	// Parts are named by their first byte. next[p] is the start of the
	// part after p (n for the last), prev[p] of the one before (-1 for the
	// first), rank[p] the rank of p merged with next[p].
	next := make([]int, n)
	prev := make([]int, n)
	rank := make([]int, n)
	h := make(pairHeap, 0, n)
	pairRank := func(p int) int {
		q := next[p]
		if q >= n {
			return noRank
		}
		return rankOf(ranks, piece[p:next[q]])
	}
	for p := 0; p < n; p++ {
		next[p], prev[p] = p+1, p-1
	}
	for p := 0; p < n; p++ {
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
		next[p] = next[q]
		if next[q] < n {
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
	for p := 0; p < n; p = next[p] {
		dst = append(dst, ranks[piece[p:next[p]]])
	}
	return dst
}

// pair is a candidate merge of the part at start with the part after it.
type pair struct{ rank, start int }

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
