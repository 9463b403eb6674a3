package postgres_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/postgres"
)

// Example opens a store on a schema of its own, creates a session, appends
// two steps and reads them back. It needs a server (DATABASE_URL), so go
// test compiles it without running it; TestExample runs the same steps
// against the test database.
func Example() {
	ctx := context.Background()
	st, err := postgres.Open(ctx, os.Getenv("DATABASE_URL"), postgres.Options{Schema: "agentmem"})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	sess, err := st.Create(ctx, store.CreateRequest{UserID: "u1", Agent: "researcher"})
	if err != nil {
		log.Fatal(err)
	}
	last := sess.LastSeq // append only if nobody else has
	resp, err := st.Append(ctx, store.AppendRequest{
		SessionID: sess.ID,
		Steps: []agentmem.Step{
			&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: agentmem.NewID()}, Task: "Find the bug"},
			&agentmem.FinalAnswerStep{StepInfo: agentmem.StepInfo{ID: agentmem.NewID()}, Answer: "It was the cache"},
		},
		ExpectedLastSeq: &last,
	})
	if err != nil {
		log.Fatal(err) // errors.Is(err, agentmem.ErrConflict): another writer won
	}
	fmt.Println("stored at", resp.Seqs)

	read, err := st.Read(ctx, store.ReadRequest{SessionID: sess.ID, WorkingSet: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range read.Steps {
		fmt.Println(s.Info().Number, s.Kind())
	}
}
