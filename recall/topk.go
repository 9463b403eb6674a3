package recall

import (
	"container/heap"
	"slices"
)

// TopK keeps the k best matches seen (highest score, ties by lowest ID)
// in a heap whose root is the worst kept. Selecting the top k of n
// candidates thus costs O(n log k) rather than sorting all n.
type TopK struct {
	k int
	h matchHeap
}

// NewTopK returns a TopK that keeps k matches; k must be at least 1.
func NewTopK(k int) *TopK { return &TopK{k: max(k, 1), h: make(matchHeap, 0, min(max(k, 1), 1024))} }

// better reports whether a ranks before b: a higher score, or the same
// score and a lower ID.
func better(a, b Match) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.ID < b.ID
}

// Admits reports whether a match with this score and ID would be kept,
// so callers can skip costly checks for those that would not.
func (t *TopK) Admits(score float64, id string) bool {
	return len(t.h) < t.k || better(Match{ID: id, Score: score}, t.h[0])
}

// Push offers a match.
func (t *TopK) Push(m Match) {
	if len(t.h) < t.k {
		heap.Push(&t.h, m)
		return
	}
	if better(m, t.h[0]) {
		t.h[0] = m
		heap.Fix(&t.h, 0)
	}
}

// Sorted returns the kept matches, best first.
func (t *TopK) Sorted() []Match {
	out := slices.Clone([]Match(t.h))
	slices.SortFunc(out, func(a, b Match) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
	return out
}

// matchHeap is a min-heap: the worst match at the root.
type matchHeap []Match

func (h matchHeap) Len() int           { return len(h) }
func (h matchHeap) Less(i, j int) bool { return better(h[j], h[i]) }
func (h matchHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *matchHeap) Push(x any)        { *h = append(*h, x.(Match)) }
func (h *matchHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
