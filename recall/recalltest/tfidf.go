package recalltest

import (
	"errors"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
)

// cosineTFIDF is the seeds' TF-IDF cosine of query and text over corpus,
// computed from scratch: the reference Search with Similarity TFIDF must
// agree with.
func cosineTFIDF(corpus []string, query, text string) float64 {
	df := map[string]float64{}
	for _, c := range corpus {
		for _, t := range recall.UniqueTerms(recall.Tokenize(c)) {
			df[t]++
		}
	}
	n := float64(len(corpus))
	vec := func(s string) map[string]float64 {
		v := map[string]float64{}
		for _, t := range recall.Tokenize(s) {
			v[t]++
		}
		for t := range v {
			v[t] *= math.Log((1+n)/(1+df[t])) + 1
		}
		return v
	}
	q, d := vec(query), vec(text)
	var dot, nq, nd float64
	for t, x := range q {
		dot += x * d[t]
		nq += x * x
	}
	for _, x := range d {
		nd += x * x
	}
	if dot == 0 {
		return 0
	}
	return dot / math.Sqrt(nq*nd)
}

func (s *suite) tfidfTests() []test {
	texts := map[string]string{
		"fox":    "The quick brown fox",
		"dog":    "The lazy dog sleeps all day while the quick fox runs and jumps and runs",
		"foxes":  "foxes and more foxes: a fox den",
		"cat":    "a cat on the mat",
		"report": "quarterly sales report for the brown company",
	}
	docs := func(tenant string) []recall.Doc {
		var out []recall.Doc
		for _, id := range slices.Sorted(maps.Keys(texts)) {
			out = append(out, recall.Doc{ID: id, Tenant: tenant, Text: texts[id], Metadata: map[string]string{"tag": map[bool]string{true: "animal", false: "work"}[id != "report"]}})
		}
		return out
	}
	return []test{
		{"DocFreqs", func(t *testing.T) {
			b := s.backend(t)
			upsert(t, b, docs("t")...)
			upsert(t, b, recall.Doc{ID: "other", Tenant: "u", Text: "fox fox fox"})
			terms := recall.UniqueTerms(recall.Tokenize("fox quick brown unicorn"))
			st, err := lexicalOf(t, b).DocFreqs(bg, "t", terms)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int64{"fox": 3, "quick": 2, "brown": 2}
			if st.Docs != 5 || !maps.Equal(st.DF, want) {
				t.Fatalf("DocFreqs = %d docs, %v; want 5, %v", st.Docs, st.DF, want)
			}
			if _, err := b.Delete(bg, "t", "fox"); err != nil {
				t.Fatal(err)
			}
			st, err = lexicalOf(t, b).DocFreqs(bg, "t", terms)
			if err != nil || st.Docs != 4 || st.DF["fox"] != 2 || st.DF["quick"] != 1 {
				t.Fatalf("after a delete: %+v, %v", st, err)
			}
			st, err = lexicalOf(t, b).DocFreqs(bg, "empty", terms)
			if err != nil || st.Docs != 0 || len(st.DF) != 0 {
				t.Fatalf("an empty tenant: %+v, %v", st, err)
			}
		}},
		{"DocFreqsOfIdentifiers", func(t *testing.T) {
			// Terms that look like IDs, hashes and numbers are counted as
			// exactly as words (a backend may keep them apart): in one
			// tenant only, and after an upsert that changes a document's
			// text, a delete and a clear.
			b := s.backend(t)
			const hash, num, short = "f9a6dabda26c", "2024112415", "x9"
			upsert(t, b,
				recall.Doc{ID: "a", Tenant: "t", Text: "call req_f9a6dabda26c returned 2024112415 rows, x9"},
				recall.Doc{ID: "b", Tenant: "t", Text: "retry f9a6dabda26c: 2024112415", Metadata: map[string]string{"k": "v"}},
				recall.Doc{ID: "c", Tenant: "t", Text: "nothing to see f9a6dabda26cff"})
			upsert(t, b, recall.Doc{ID: "d", Tenant: "u", Text: "f9a6dabda26c f9a6dabda26c in another tenant"})
			df := func(want map[string]int64) {
				t.Helper()
				st, err := lexicalOf(t, b).DocFreqs(bg, "t", []string{hash, num, short, "f9a6dabda26cff", "00000000000"})
				if err != nil {
					t.Fatal(err)
				}
				if !maps.Equal(st.DF, want) {
					t.Fatalf("DocFreqs = %v, want %v", st.DF, want)
				}
			}
			df(map[string]int64{hash: 2, num: 2, short: 1, "f9a6dabda26cff": 1})
			if got := count(t, b, "t", "F9A6DABDA26C"); got != 2 {
				t.Errorf("a search for the hash finds %d documents, want 2", got)
			}
			upsert(t, b, recall.Doc{ID: "a", Tenant: "t", Text: "call returned nothing"})
			df(map[string]int64{hash: 1, num: 1, "f9a6dabda26cff": 1})
			if _, err := b.Delete(bg, "t", "c"); err != nil {
				t.Fatal(err)
			}
			df(map[string]int64{hash: 1, num: 1})
			if _, err := b.Clear(bg, "t", recall.Filter{Metadata: map[string]string{"k": "v"}}); err != nil {
				t.Fatal(err)
			}
			df(map[string]int64{})
			st, err := lexicalOf(t, b).DocFreqs(bg, "u", []string{hash})
			if err != nil || st.DF[hash] != 1 {
				t.Fatalf("the other tenant: %+v, %v", st, err)
			}
		}},
		{"CosineAsTheSeed", func(t *testing.T) {
			b := s.backend(t)
			upsert(t, b, docs("t")...)
			ix := recall.New(b, recall.Options{})
			corpus := slices.Collect(maps.Values(texts))
			const query = "quick fox"
			hits, err := ix.Search(bg, recall.Query{Tenant: "t", Text: query, K: 10, Similarity: recall.TFIDF})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, id := range slices.Sorted(maps.Keys(texts)) {
				if cosineTFIDF(corpus, query, texts[id]) > 0 {
					want = append(want, id)
				}
			}
			slices.SortStableFunc(want, func(a, b string) int {
				return -cmpFloat(cosineTFIDF(corpus, query, texts[a]), cosineTFIDF(corpus, query, texts[b]))
			})
			if got := hitIDs(hits); !slices.Equal(got, want) {
				t.Fatalf("TF-IDF ranking %v, want %v", got, want)
			}
			for _, h := range hits {
				if w := cosineTFIDF(corpus, query, h.Doc.Text); math.Abs(h.Score-w) > 1e-9 {
					t.Fatalf("%s scores %v, want the cosine %v", h.Doc.ID, h.Score, w)
				}
			}
			// BM25 stays the default, and ranks otherwise: the long "dog"
			// document holds both terms, which BM25 rewards more than
			// cosine does.
			def, err := ix.Search(bg, recall.Query{Tenant: "t", Text: query, K: 10})
			if err != nil {
				t.Fatal(err)
			}
			bm25, err := ix.Search(bg, recall.Query{Tenant: "t", Text: query, K: 10, Similarity: recall.BM25})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(hitIDs(def), hitIDs(bm25)) || def[0].Score == hits[0].Score {
				t.Fatalf("default %v (%v), bm25 %v, tfidf %v: the default is not BM25", hitIDs(def), def[0].Score, hitIDs(bm25), hitIDs(hits))
			}
			// With a filter, as the seed's search(filter=...).
			hits, err = ix.Search(bg, recall.Query{Tenant: "t", Text: "brown", K: 10, Similarity: recall.TFIDF,
				Filter: recall.Filter{Metadata: map[string]string{"tag": "work"}}})
			if err != nil || !slices.Equal(hitIDs(hits), []string{"report"}) {
				t.Fatalf("filtered TF-IDF search = %v, %v; want [report]", hitIDs(hits), err)
			}
			_, err = ix.Search(bg, recall.Query{Tenant: "t", Text: query, K: 1, Similarity: "cosine"})
			if !errors.Is(err, agentmem.ErrInvalid) {
				t.Fatalf("an unknown similarity: %v, want ErrInvalid", err)
			}
		}},
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
