package recall_test

import (
	"context"
	"fmt"

	"github.com/agentmem/agentmem/recall"
)

// An Index over the in-memory backend: turns of two sessions, searched
// with a window of one turn around each hit.
func ExampleIndex_Search() {
	ctx := context.Background()
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	defer ix.Close()
	turns := []struct{ session, text string }{
		{"s1", "alice: Where did you go hiking last summer?"},
		{"s1", "bob: We went to the Dolomites, it was stunning."},
		{"s1", "alice: Nice! I should go too."},
		{"s2", "bob: My new job starts on Monday."},
	}
	for i, t := range turns {
		err := ix.Upsert(ctx, recall.Doc{ID: fmt.Sprint(i), Tenant: "acme", Text: t.text, Group: t.session, Seq: int64(i + 1)})
		if err != nil {
			panic(err)
		}
	}
	hits, err := ix.Search(ctx, recall.Query{Tenant: "acme", Text: "hiking trip", K: 1, Before: 1, After: 1})
	if err != nil {
		panic(err)
	}
	for _, h := range hits {
		fmt.Println("hit:", h.Doc.Text)
		for _, w := range h.Window {
			fmt.Println("  ", w.Seq, w.Text)
		}
	}
	// Output:
	// hit: alice: Where did you go hiking last summer?
	//    1 alice: Where did you go hiking last summer?
	//    2 bob: We went to the Dolomites, it was stunning.
}

// The seeds' vector store: upsert without an ID returns a new one, and a
// search can ask for TF-IDF cosine (BM25 is the default) and filter on
// metadata.
func ExampleIndex_Put() {
	ctx := context.Background()
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	defer ix.Close()
	ids, err := ix.Put(ctx,
		recall.Doc{Tenant: "acme", Text: "The quick brown fox", Metadata: map[string]string{"tag": "test"}},
		recall.Doc{Tenant: "acme", Text: "A lazy brown dog", Metadata: map[string]string{"tag": "other"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(ids), ids[0] != "")
	hits, err := ix.Search(ctx, recall.Query{Tenant: "acme", Text: "quick fox", K: 3, Similarity: recall.TFIDF,
		Filter: recall.Filter{Metadata: map[string]string{"tag": "test"}}})
	if err != nil {
		panic(err)
	}
	for _, h := range hits {
		fmt.Printf("%s %.2f\n", h.Doc.Text, h.Score)
	}
	// Output:
	// 2 true
	// The quick brown fox 0.89
}
