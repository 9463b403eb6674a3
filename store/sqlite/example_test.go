package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/sqlite"
)

// Example opens a store in a file, creates a session, appends two steps
// only if nobody else has written to it meanwhile, and reads the working
// set back, as a resumed run would.
func Example() {
	dir, err := os.MkdirTemp("", "agentmem-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "agentmem.db"), sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	sess, err := st.Create(ctx, store.CreateRequest{UserID: "u1", Agent: "researcher"})
	if err != nil {
		log.Fatal(err)
	}
	last := sess.LastSeq
	resp, err := st.Append(ctx, store.AppendRequest{
		SessionID: sess.ID,
		Steps: []agentmem.Step{
			&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: agentmem.NewID()}, Task: "Find the bug"},
			&agentmem.FinalAnswerStep{StepInfo: agentmem.StepInfo{ID: agentmem.NewID()}, Answer: "It was the cache"},
		},
		ExpectedLastSeq: &last, // errors.Is(err, agentmem.ErrConflict) if another writer won
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored at", resp.Seqs)

	read, err := st.Read(ctx, store.ReadRequest{SessionID: sess.ID, WorkingSet: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range read.Steps {
		fmt.Println(s.Info().Number, s.Kind())
	}
	// Output:
	// stored at [1 2]
	// 1 task
	// 2 final_answer
}
