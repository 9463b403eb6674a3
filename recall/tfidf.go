package recall

import (
	"cmp"
	"context"
	"math"
	"slices"
)

// Similarity is how Search scores a document's text against the query's.
type Similarity string

// The similarities.
const (
	// BM25 is Okapi BM25 with pseudo-relevance feedback and the
	// neighbour and group shares of the Ranking: the default, and what
	// recall is tuned for.
	BM25 Similarity = "bm25"
	// TFIDF is the cosine of TF-IDF vectors, as the seeds'
	// InMemoryVectorStore scores. Each term weighs tf * idf, with idf =
	// ln((1 + N) / (1 + df)) + 1 over the tenant's N documents. A document
	// scores the cosine of its vector with the query's (in [0, 1]). No feedback, neighbour or group share is added.
	TFIDF Similarity = "tfidf"
)

// ParseSimilarity parses a similarity as the HTTP API, MCP and the CLI
// take it: "bm25", "tfidf", or empty for the default (BM25). Anything else
// is an *agentmem.InvalidError for the field "similarity".
func ParseSimilarity(s string) (Similarity, error) {
	switch Similarity(s) {
	case "", BM25:
		return BM25, nil
	case TFIDF:
		return TFIDF, nil
	}
	return "", invalid("similarity", "%q is not %q or %q", s, BM25, TFIDF)
}

// DocStats are a tenant's collection statistics (LexicalSearcher.DocFreqs).
type DocStats struct {
	// Docs is the number of the tenant's documents.
	Docs int64
	// DF is, for each term asked for that some document holds, how many
	// documents hold it. Terms no document holds are left out.
	DF map[string]int64
}

// tfidfWeights returns the TF-IDF weights of analyzed terms (repeats
// count) and their Euclidean norm.
func tfidfWeights(terms []string, st DocStats) (map[string]float64, float64) {
	w := make(map[string]float64, len(terms))
	for _, t := range terms {
		w[t]++
	}
	var sum float64
	n := float64(st.Docs)
	for t, tf := range w {
		x := tf * (math.Log((1+n)/(1+float64(st.DF[t]))) + 1)
		w[t] = x
		sum += x * x
	}
	return w, math.Sqrt(sum)
}

// tfidf ranks by TF-IDF cosine the n best BM25 candidates of the query
// (the documents that share a term with it, the best n of them in a large
// tenant), best first, ties by ID.
func (ix *Index) tfidf(ctx context.Context, q Query, n int) ([]Match, error) {
	qterms := Tokenize(q.Text)
	if len(qterms) == 0 {
		return nil, nil
	}
	cands, err := ix.caps.Lexical.Lexical(ctx, LexicalQuery{Tenant: q.Tenant, Terms: UniqueTerms(qterms), Filter: q.Filter, Limit: n})
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	ids := make([]string, len(cands))
	for i, m := range cands {
		ids[i] = m.ID
	}
	docs, err := ix.b.Get(ctx, q.Tenant, ids...)
	if err != nil {
		return nil, err
	}
	docTerms := make([][]string, len(docs))
	all := slices.Clone(qterms)
	for i, d := range docs {
		docTerms[i] = Tokenize(d.Text)
		all = append(all, docTerms[i]...)
	}
	st, err := ix.caps.Lexical.DocFreqs(ctx, q.Tenant, UniqueTerms(all))
	if err != nil {
		return nil, err
	}
	qw, qn := tfidfWeights(qterms, st)
	out := make([]Match, 0, len(docs))
	for i, d := range docs {
		dw, dn := tfidfWeights(docTerms[i], st)
		var dot float64
		for t, x := range qw {
			dot += x * dw[t]
		}
		if dot == 0 || dn == 0 || qn == 0 {
			continue
		}
		out = append(out, Match{ID: d.ID, Group: d.Group, Seq: d.Seq, Score: dot / (qn * dn)})
	}
	slices.SortFunc(out, func(a, b Match) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, nil
}
