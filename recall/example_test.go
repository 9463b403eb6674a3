package recall_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
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

// StepDocs turns a session's log entry into what recall indexes, with the
// session, user and agent as metadata for scoped searches (Scope).
func ExampleStepDocs() {
	sess := &store.Session{ID: "s1", Tenant: "acme", UserID: "alice", Agent: "coder"}
	entry := store.Entry{Seq: 3, Kind: store.StepEntry, Time: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC),
		Step: &agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("I moved to Lisbon")}}}
	for _, d := range recall.StepDocs(sess, entry) {
		fmt.Println(d.ID, d.Group, d.Seq, d.Text, d.Metadata)
	}
	fmt.Println(recall.Scope("", "alice", "").Metadata)
	// Output:
	// s1#3 s1 3 user: I moved to Lisbon map[agent:coder kind:message session:s1 step:3 user:alice]
	// map[user:alice]
}

// An IndexedStore makes every turn written to a store searchable: a
// follower indexes the store's change feed in the background, and Sync
// waits until it has reached the writes made so far (read-your-writes).
func ExampleIndexedStore() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{}) // or SQLite, PostgreSQL
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	indexed := recall.NewIndexedStore(st, &recall.Indexer{Index: ix, Store: st})
	defer indexed.Close() // stops the follower, then closes the store
	indexed.Start()

	if _, err := indexed.Create(ctx, store.CreateRequest{ID: "s1", Tenant: "acme", UserID: "alice"}); err != nil {
		panic(err)
	}
	turn := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "t1"}, Task: "My parrot Kiwi only eats grapes"}
	if _, err := indexed.Append(ctx, store.AppendRequest{Tenant: "acme", SessionID: "s1", Steps: []agentmem.Step{turn}}); err != nil {
		panic(err)
	}
	if err := indexed.Sync(ctx); err != nil {
		panic(err)
	}
	hits, err := ix.Search(ctx, recall.Query{Tenant: "acme", Text: "what does the parrot eat", K: 1, Filter: recall.Scope("", "alice", "")})
	if err != nil {
		panic(err)
	}
	for _, h := range hits {
		fmt.Println(h.Doc.ID, h.Doc.Text)
	}
	// Output:
	// s1#1 My parrot Kiwi only eats grapes
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
