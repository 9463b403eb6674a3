package recallview_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/views/recallview"
)

// StepDocs turns a session's log entry into what recall indexes, with the
// session, user and agent as metadata for scoped searches (Scope).
func ExampleStepDocs() {
	sess := &store.Session{ID: "s1", Tenant: "acme", UserID: "alice", Agent: "coder"}
	entry := store.Entry{Seq: 3, Kind: store.StepEntry, Time: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC),
		Step: &agentmem.MessageStep{Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("I moved to Lisbon")}}}
	for _, d := range recallview.StepDocs(sess, entry) {
		fmt.Println(d.ID, d.Group, d.Seq, d.Text, d.Metadata)
	}
	fmt.Println(recall.Scope("", "alice", "").Metadata)
	// Output:
	// s1#3 s1 3 user: I moved to Lisbon map[agent:coder kind:message session:s1 step:3 user:alice]
	// map[user:alice]
}

// Start makes every turn written to a store searchable: a follower
// indexes the store's change feed in the background, and Sync waits
// until it has reached the writes made so far (read-your-writes).
func ExampleStart() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{}) // or SQLite, PostgreSQL
	defer st.Close()
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	follower, stop := recallview.Start(st, st, &recallview.Indexer{Index: ix, Store: st}, recallview.FollowerOptions{})
	defer stop()

	if _, err := st.Create(ctx, store.CreateRequest{ID: "s1", Tenant: "acme", UserID: "alice"}); err != nil {
		panic(err)
	}
	turn := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "t1"}, Task: "My parrot Kiwi only eats grapes"}
	if _, err := st.Append(ctx, store.AppendRequest{Tenant: "acme", SessionID: "s1", Steps: []agentmem.Step{turn}}); err != nil {
		panic(err)
	}
	if err := follower.Sync(ctx); err != nil {
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
