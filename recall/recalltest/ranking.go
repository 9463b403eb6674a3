package recalltest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/agentmem/agentmem/recall"
)

func (s *suite) rankingTests() []test {
	return []test{
		{"Relevance", func(t *testing.T) {
			b := s.backend(t)
			// Filler documents, so that no term is in half of them.
			var docs []recall.Doc
			for i := range 20 {
				docs = append(docs, recall.Doc{ID: fmt.Sprintf("filler%02d", i), Tenant: "t", Text: fmt.Sprintf("weekly meeting notes number %d about budgets", i)})
			}
			docs = append(docs,
				recall.Doc{ID: "both", Tenant: "t", Text: "The database migration broke the deploy"},
				recall.Doc{ID: "common", Tenant: "t", Text: "meeting about the deploy schedule"},
				recall.Doc{ID: "rare", Tenant: "t", Text: "migration meeting"},
				recall.Doc{ID: "none", Tenant: "t", Text: "lunch menu for friday"})
			upsert(t, b, docs...)
			ms, err := lexicalOf(t, b).Lexical(bg, recall.LexicalQuery{Tenant: "t", Terms: recall.Tokenize("deploy migrations"), Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			got := matchIDs(ms)
			// The doc with both terms first.
			if len(got) != 3 || got[0] != "both" {
				t.Fatalf("Lexical(deploy migrations) = %v", got)
			}
			if slices.Contains(got, "none") || slices.Contains(got, "filler00") {
				t.Errorf("documents without a query term were returned: %v", got)
			}
			for i := 1; i < len(ms); i++ {
				if ms[i].Score > ms[i-1].Score || ms[i].Score <= 0 {
					t.Errorf("scores not positive and descending: %+v", ms)
				}
			}
			upsert(t, b, recall.Doc{ID: "deploy2", Tenant: "t", Text: "deploy checklist"}, recall.Doc{ID: "deploy3", Tenant: "t", Text: "deploy again"})
			got = lexical(t, b, "t", "deploy migration", 50, recall.Filter{})
			if slices.Index(got, "rare") > slices.Index(got, "common") {
				t.Errorf("the rarer term does not weigh more: %v", got)
			}
			// Stemming: query and documents are analyzed alike.
			if got := lexical(t, b, "t", "migrating", 50, recall.Filter{}); len(got) != 2 {
				t.Errorf("Lexical(migrating) = %v, want the two migration docs", got)
			}
			// Stop words alone match nothing.
			if got := lexical(t, b, "t", "the about for", 50, recall.Filter{}); len(got) != 0 {
				t.Errorf("stop words matched %v", got)
			}
		}},
		{"LengthAndFrequency", func(t *testing.T) {
			b := s.backend(t)
			var docs []recall.Doc
			for i := range 10 {
				docs = append(docs, recall.Doc{ID: fmt.Sprintf("f%d", i), Tenant: "t", Text: fmt.Sprintf("unrelated filler text %d", i)})
			}
			docs = append(docs,
				recall.Doc{ID: "short", Tenant: "t", Text: "parrot cage"},
				recall.Doc{ID: "long", Tenant: "t", Text: "parrot cage with many other words around it here"},
				recall.Doc{ID: "twice", Tenant: "t", Text: "parrot parrot cage"})
			upsert(t, b, docs...)
			got := lexical(t, b, "t", "parrot", 10, recall.Filter{})
			if !slices.Equal(got, []string{"twice", "short", "long"}) {
				t.Errorf("Lexical(parrot) = %v, want twice, short, long", got)
			}
		}},
		{"LimitAndTies", func(t *testing.T) {
			b := s.backend(t)
			var docs []recall.Doc
			for _, id := range []string{"m", "c", "x", "a", "q"} {
				docs = append(docs, recall.Doc{ID: id, Tenant: "t", Text: "identical text"})
			}
			for i := range 10 {
				docs = append(docs, recall.Doc{ID: fmt.Sprintf("o%d", i), Tenant: "t", Text: fmt.Sprintf("other %d", i)})
			}
			upsert(t, b, docs...)
			if got := lexical(t, b, "t", "identical", 10, recall.Filter{}); !slices.Equal(got, []string{"a", "c", "m", "q", "x"}) {
				t.Errorf("ties = %v, want ID order", got)
			}
			for k := 1; k <= 5; k++ {
				if got := lexical(t, b, "t", "identical", k, recall.Filter{}); len(got) != k {
					t.Errorf("limit %d: %d results", k, len(got))
				}
			}
			if got := lexical(t, b, "t", "identical", 100, recall.Filter{}); len(got) != 5 {
				t.Errorf("limit 100: %v", got)
			}
		}},
		{"SameAsMemory", func(t *testing.T) {
			// Every backend computes the in-memory backend's BM25: same
			// documents, same order, same scores.
			b := s.backend(t)
			mem := recall.NewMemory(recall.MemoryOptions{})
			defer mem.Close()
			c := NewCorpus(7)
			docs := c.Docs("t", 600)
			upsert(t, b, docs...)
			upsert(t, mem, docs...)
			// Deletes and replacements must keep the statistics exact.
			for _, d := range docs[:50] {
				if _, err := b.Delete(bg, "t", d.ID); err != nil {
					t.Fatal(err)
				}
				if _, err := mem.Delete(bg, "t", d.ID); err != nil {
					t.Fatal(err)
				}
			}
			repl := c.Docs("t", 30)
			upsert(t, b, repl...)
			upsert(t, mem, repl...)
			for range 40 {
				terms := recall.UniqueTerms(recall.Tokenize(c.Query()))
				want, err := mem.Lexical(bg, recall.LexicalQuery{Tenant: "t", Terms: terms, Limit: 20})
				if err != nil {
					t.Fatal(err)
				}
				got, err := lexicalOf(t, b).Lexical(bg, recall.LexicalQuery{Tenant: "t", Terms: terms, Limit: 20})
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) {
					t.Fatalf("%v: %d matches, memory has %d", terms, len(got), len(want))
				}
				for i := range got {
					if got[i].ID != want[i].ID || math.Abs(got[i].Score-want[i].Score) > 1e-9*want[i].Score {
						t.Fatalf("%v: match %d is %+v, memory's %+v", terms, i, got[i], want[i])
					}
				}
			}
		}},
		{"Gating", func(t *testing.T) {
			// A tenant of recall.GateMinDocs documents: candidates are
			// gated on the rarer query terms (recall.GateTerms), on every
			// backend as in memory, with and without a filter. A search
			// scoped to a session whose documents hold no gate term makes
			// candidates of the other terms' documents in the session.
			b := s.backend(t)
			mem := recall.NewMemory(recall.MemoryOptions{})
			defer mem.Close()
			c := NewCorpus(11)
			docs := c.Docs("t", recall.GateMinDocs)
			docs = append(docs[:len(docs)-1], recall.Doc{ID: "needle", Tenant: "t", Group: "elsewhere", Seq: 1,
				Text: "zqneedle in a haystack", Metadata: map[string]string{"session": "elsewhere"}})
			for start := 0; start < len(docs); start += 1000 {
				upsert(t, b, docs[start:min(start+1000, len(docs))]...)
				upsert(t, mem, docs[start:min(start+1000, len(docs))]...)
			}
			scope := recall.Filter{Metadata: map[string]string{"session": docs[0].Group}}
			type query struct {
				terms []string
				f     recall.Filter
			}
			// A rare term held outside the scope only, and a common one
			// held in it.
			common := recall.Tokenize(docs[0].Text)[1]
			queries := []query{
				{recall.UniqueTerms(append(recall.Tokenize("zqneedle"), common)), recall.Filter{}},
				{recall.UniqueTerms(append(recall.Tokenize("zqneedle"), common)), scope},
			}
			for i := range 60 {
				q := query{terms: recall.UniqueTerms(recall.Tokenize(c.Query()))}
				if i%2 == 1 {
					q.f = recall.Filter{Metadata: map[string]string{"session": docs[c.rng.IntN(len(docs))].Group}}
				}
				queries = append(queries, q)
			}
			compared := 0
			for _, q := range queries {
				want, err := mem.Lexical(bg, recall.LexicalQuery{Tenant: "t", Terms: q.terms, Limit: 10, Filter: q.f})
				if err != nil {
					t.Fatal(err)
				}
				if len(q.f.Metadata) == 0 {
					// A backend may read at most recall.GateBudget
					// candidates (SQLite's, the newest): compare the
					// queries whose rarest term fits.
					st, err := mem.DocFreqs(bg, "t", q.terms)
					if err != nil {
						t.Fatal(err)
					}
					rarest := int64(math.MaxInt64)
					for _, n := range st.DF {
						if n > 0 {
							rarest = min(rarest, n)
						}
					}
					if rarest > recall.GateBudget {
						continue
					}
				}
				got, err := lexicalOf(t, b).Lexical(bg, recall.LexicalQuery{Tenant: "t", Terms: q.terms, Limit: 10, Filter: q.f})
				if err != nil {
					t.Fatal(err)
				}
				compared++
				if len(got) != len(want) {
					t.Fatalf("%v %v: %d matches %v, memory has %d %v", q.terms, q.f.Metadata, len(got), matchIDs(got), len(want), matchIDs(want))
				}
				for i := range got {
					if got[i].ID != want[i].ID || math.Abs(got[i].Score-want[i].Score) > 1e-9*want[i].Score {
						t.Fatalf("%v %v: match %d is %+v, memory's %+v", q.terms, q.f.Metadata, i, got[i], want[i])
					}
				}
				if q.terms[0] == "zqneedl" && len(q.f.Metadata) > 0 && len(got) == 0 {
					t.Errorf("%v in %v: nothing found, though the session holds %q", q.terms, q.f.Metadata, common)
				}
			}
			if compared < len(queries)/2 {
				t.Errorf("only %d of %d queries compared", compared, len(queries))
			}
		}},
		{"IndexSearch", func(t *testing.T) {
			b := s.backend(t)
			ix := recall.New(b, recall.Options{})
			var docs []recall.Doc
			for i := range 30 {
				docs = append(docs, recall.Doc{ID: fmt.Sprintf("s1-%02d", i), Tenant: "t", Group: "s1", Seq: int64(i + 1), Text: fmt.Sprintf("small talk about the weather, turn %d", i)})
			}
			docs = append(docs, recall.Doc{ID: "s2-01", Tenant: "t", Group: "s2", Seq: 1, Text: "Where did you go hiking?"},
				recall.Doc{ID: "s2-02", Tenant: "t", Group: "s2", Seq: 2, Text: "We went to the Dolomites last summer"})
			upsert(t, b, docs...)
			hits, err := ix.Search(bg, recall.Query{Tenant: "t", Text: "hiking trip", K: 2, Before: 1, After: 1})
			if err != nil {
				t.Fatal(err)
			}
			// The answer ranks with its question: its neighbour matched.
			if got := hitIDs(hits); !slices.Equal(got, []string{"s2-01", "s2-02"}) {
				t.Fatalf("Search(hiking trip) = %v", got)
			}
			if w := docIDs(hits[0].Window); !slices.Equal(w, []string{"s2-01", "s2-02"}) {
				t.Errorf("window of s2-01 = %v", w)
			}
			if hits[0].Score <= hits[1].Score {
				t.Errorf("scores %v, %v", hits[0].Score, hits[1].Score)
			}
			hits, err = ix.Search(bg, recall.Query{Tenant: "t", Text: "weather", K: 3, Filter: recall.Filter{Metadata: map[string]string{"none": "x"}}})
			if err != nil || len(hits) != 0 {
				t.Errorf("filtered search = %v, %v", hitIDs(hits), err)
			}
			if hits, err := ix.Search(bg, recall.Query{Tenant: "t", Text: "weather", K: 4}); err != nil || len(hits) != 4 {
				t.Errorf("K=4: %v, %v", hitIDs(hits), err)
			}
		}},
	}
}

func (s *suite) neighbourTests() []test {
	return []test{
		{"Around", func(t *testing.T) {
			b := s.backend(t)
			for _, seq := range []int64{5, 1, 3, 2, 8} {
				upsert(t, b, recall.Doc{ID: fmt.Sprintf("g-%d", seq), Tenant: "t", Text: "x", Group: "g", Seq: seq})
			}
			upsert(t, b, recall.Doc{ID: "h-2", Tenant: "t", Text: "x", Group: "h", Seq: 2}, recall.Doc{ID: "nogroup", Tenant: "t", Text: "x", Seq: 2})
			for _, tc := range []struct {
				from, to int64
				want     []string
			}{
				{1, 3, []string{"g-1", "g-2", "g-3"}},
				{2, 6, []string{"g-2", "g-3", "g-5"}},
				{6, 7, nil},
				{-10, 100, []string{"g-1", "g-2", "g-3", "g-5", "g-8"}},
				{4, 2, nil},
			} {
				ns, err := b.Around(bg, "t", "g", tc.from, tc.to)
				if err != nil {
					t.Fatal(err)
				}
				if got := docIDs(ns); !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
					t.Errorf("Around(g, %d, %d) = %v, want %v", tc.from, tc.to, got, tc.want)
				}
			}
			if ns, err := b.Around(bg, "t", "", 0, 10); err != nil || len(ns) != 0 {
				t.Errorf("Around of no group = %v, %v", docIDs(ns), err)
			}
		}},
	}
}
