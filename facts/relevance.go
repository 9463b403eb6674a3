package facts

import (
	"math"
	"strings"

	"github.com/agentmem/agentmem/recall"
)

// BM25 parameters, the usual ones.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// termFreq returns the analyzed terms of text (recall.Tokenize) with
// their counts.
func termFreq(text string) map[string]int {
	tf := map[string]int{}
	for _, t := range recall.Tokenize(text) {
		tf[t]++
	}
	return tf
}

// lexicalSimilarity is the cosine of the term-frequency vectors of a and
// b, in [0, 1]: 1 for texts that say the same words ("User likes tea." and
// "the user likes tea"). Texts with no terms (only stop words) are
// similar only when they are equal up to case and spacing.
func lexicalSimilarity(a, b map[string]int, textA, textB string) float64 {
	if len(a) == 0 || len(b) == 0 {
		if len(a) == 0 && len(b) == 0 && normalize(textA) == normalize(textB) {
			return 1
		}
		return 0
	}
	var dot, na, nb float64
	for t, x := range a {
		na += float64(x * x)
		dot += float64(x * b[t])
	}
	for _, y := range b {
		nb += float64(y * y)
	}
	return dot / math.Sqrt(na*nb)
}

// normalize lower-cases text and collapses its spaces.
func normalize(text string) string {
	return strings.Join(strings.Fields(strings.ToLower(text)), " ")
}

// cosine returns the cosine similarity of two vectors, or 0 when their
// lengths differ or one is zero.
func cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// bm25 scores docs (already analyzed) against the query terms with Okapi
// BM25 over docs as the collection. Scores are divided by the best, so
// they lie in [0, 1]: relevance is then comparable with confidence and
// their product ranks. A query with no terms scores every doc 0.
func bm25(query []string, docs []map[string]int) []float64 {
	scores := make([]float64, len(docs))
	if len(query) == 0 || len(docs) == 0 {
		return scores
	}
	var total float64
	lens := make([]float64, len(docs))
	for i, d := range docs {
		for _, n := range d {
			lens[i] += float64(n)
		}
		total += lens[i]
	}
	avg := total / float64(len(docs))
	if avg == 0 {
		avg = 1
	}
	seen := map[string]bool{}
	best := 0.0
	for _, q := range query {
		if seen[q] {
			continue
		}
		seen[q] = true
		df := 0
		for _, d := range docs {
			if d[q] > 0 {
				df++
			}
		}
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (float64(len(docs))-float64(df)+0.5)/(float64(df)+0.5))
		for i, d := range docs {
			tf := float64(d[q])
			if tf == 0 {
				continue
			}
			scores[i] += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*lens[i]/avg))
		}
	}
	for _, s := range scores {
		best = max(best, s)
	}
	if best > 0 {
		for i := range scores {
			scores[i] /= best
		}
	}
	return scores
}
