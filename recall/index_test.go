package recall

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"testing"
)

func TestTokenize(t *testing.T) {
	got := Tokenize("The Cats AREN'T running, Anna's café-Bar: 2023! Ünïcode_Straße")
	want := []string{"cat", "run", "anna", "café", "bar", "2023", "ünïcode", "straße"}
	if !slices.Equal(got, want) {
		t.Errorf("Tokenize = %q, want %q", got, want)
	}
	for _, w := range []string{"the", "and", "is", "what", "s", "t", "you"} {
		if !IsStopWord(w) {
			t.Errorf("IsStopWord(%q) = false", w)
		}
	}
	for _, w := range []string{"cat", "alice", "may", "2023"} {
		if IsStopWord(w) {
			t.Errorf("IsStopWord(%q) = true", w)
		}
	}
	if got := Tokenize("the and of it is"); len(got) != 0 {
		t.Errorf("Tokenize of stop words = %q", got)
	}
}

// corpus is a hand-made corpus; its analyzed lengths are 3, 6, 4 and 2.
var corpus = []Doc{
	{ID: "a", Text: "The cat sat on the mat", Metadata: map[string]string{"kind": "pet", "n": "1"}},
	{ID: "b", Text: "The dog chased the cat around the cat tree", Metadata: map[string]string{"kind": "pet", "n": "2"}},
	{ID: "c", Text: "Dogs and cats living together", Metadata: map[string]string{"kind": "pet", "n": "3"}},
	{ID: "d", Text: "A bird in the hand", Metadata: map[string]string{"kind": "wild"}},
}

func newCorpus(cfg Config) *Index {
	ix := NewIndex(cfg)
	for _, d := range corpus {
		ix.Upsert(d)
	}
	return ix
}

func ids(hits []Hit) []string {
	var s []string
	for _, h := range hits {
		s = append(s, h.ID)
	}
	return s
}

// bm25 is the BM25 term score, written out for the test.
func bm25(tf, df, n, dl, avg float64) float64 {
	idf := math.Log(1 + (n-df+0.5)/(df+0.5))
	return idf * tf * 2.2 / (tf + 1.2*(0.25+0.75*dl/avg))
}

func TestSearchRanking(t *testing.T) {
	ix := newCorpus(Config{})
	const avg = 15.0 / 4
	tests := []struct {
		query  string
		want   []string
		scores []float64
	}{
		// b has cat twice; c is longer than a.
		{"cat", []string{"b", "a", "c"}, []float64{bm25(2, 3, 4, 6, avg), bm25(1, 3, 4, 3, avg), bm25(1, 3, 4, 4, avg)}},
		// The rarer dog wins, and c is shorter than b.
		{"dogs and a cat", []string{"c", "b", "a"}, []float64{
			bm25(1, 2, 4, 4, avg) + bm25(1, 3, 4, 4, avg),
			bm25(1, 2, 4, 6, avg) + bm25(2, 3, 4, 6, avg),
			bm25(1, 3, 4, 3, avg),
		}},
		{"hands", []string{"d"}, []float64{bm25(1, 1, 4, 2, avg)}},
		{"the of", nil, nil},
		{"zebra", nil, nil},
	}
	for _, tt := range tests {
		hits := ix.Search(tt.query, 10, nil)
		if got := ids(hits); !slices.Equal(got, tt.want) {
			t.Errorf("Search(%q) = %v, want %v", tt.query, got, tt.want)
			continue
		}
		for i, h := range hits {
			if math.Abs(h.Score-tt.scores[i]) > 1e-12 {
				t.Errorf("Search(%q)[%d].Score = %v, want %v", tt.query, i, h.Score, tt.scores[i])
			}
		}
	}
	if got := ids(ix.Search("cat", 2, nil)); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("Search(cat, k=2) = %v", got)
	}
	if got := ix.Search("cat", 0, nil); got != nil {
		t.Errorf("Search(k=0) = %v", got)
	}
	// With no length normalization a and c tie, and tie by ID.
	if got := ids(newCorpus(Config{B: -1}).Search("cat", 10, nil)); !slices.Equal(got, []string{"b", "a", "c"}) {
		t.Errorf("Search(cat) with b=0 = %v", got)
	}
}

func TestSearchFilter(t *testing.T) {
	ix := newCorpus(Config{})
	if got := ids(ix.Search("cat bird", 10, map[string]string{"kind": "wild"})); !slices.Equal(got, []string{"d"}) {
		t.Errorf("filter kind=wild: %v", got)
	}
	if got := ids(ix.Search("cat", 10, map[string]string{"kind": "pet", "n": "3"})); !slices.Equal(got, []string{"c"}) {
		t.Errorf("filter kind=pet n=3: %v", got)
	}
	if got := ix.Search("cat", 10, map[string]string{"n": ""}); len(got) != 0 {
		t.Errorf("filter on a value no doc has: %v", ids(got))
	}
	if got := ids(ix.Search("cat", 10, map[string]string{})); len(got) != 3 {
		t.Errorf("empty filter: %v", got)
	}
}

func TestUpsertDeleteGet(t *testing.T) {
	ix := newCorpus(Config{})
	if ix.Len() != 4 {
		t.Fatalf("Len = %d", ix.Len())
	}
	meta := map[string]string{"kind": "pet"}
	ix.Upsert(Doc{ID: "a", Text: "a parrot", Metadata: meta})
	meta["kind"] = "changed"
	if ix.Len() != 4 {
		t.Errorf("Len after replacing = %d", ix.Len())
	}
	d, ok := ix.Get("a")
	if !ok || d.Text != "a parrot" || d.Metadata["kind"] != "pet" {
		t.Errorf("Get(a) = %+v, %v", d, ok)
	}
	d.Metadata["kind"] = "mutated"
	if d, _ := ix.Get("a"); d.Metadata["kind"] != "pet" {
		t.Errorf("Get returned the index's own metadata")
	}
	if got := ids(ix.Search("cat", 10, nil)); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("Search(cat) after replacing a = %v", got)
	}
	if got := ids(ix.Search("parrots", 10, nil)); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Search(parrots) = %v", got)
	}
	if !ix.Delete("b") || ix.Delete("b") {
		t.Errorf("Delete(b) twice")
	}
	if _, ok := ix.Get("b"); ok {
		t.Errorf("Get(b) after Delete")
	}
	if got := ids(ix.Search("cat", 10, nil)); !slices.Equal(got, []string{"c"}) {
		t.Errorf("Search(cat) after Delete(b) = %v", got)
	}
	for _, id := range []string{"a", "c", "d"} {
		ix.Delete(id)
	}
	if ix.Len() != 0 || ix.Search("cat", 10, nil) != nil || len(ix.postings) != 0 || ix.totalLen != 0 {
		t.Errorf("index not empty after deleting everything: %d docs, %d terms", ix.Len(), len(ix.postings))
	}
}

func TestConcurrent(t *testing.T) {
	ix := newCorpus(Config{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				id := fmt.Sprintf("g%d-%d", g, i%20)
				ix.Upsert(Doc{ID: id, Text: "cat number " + strconv.Itoa(i), Metadata: map[string]string{"g": strconv.Itoa(g)}})
				for _, h := range ix.Search("cat number", 5, map[string]string{"g": strconv.Itoa(g)}) {
					h.Doc.Metadata["x"] = "y"
				}
				ix.Get(id)
				ix.Len()
				if i%3 == 0 {
					ix.Delete(id)
				}
			}
		}()
	}
	wg.Wait()
	if n := ix.Len(); n < 4 {
		t.Errorf("Len = %d", n)
	}
}
