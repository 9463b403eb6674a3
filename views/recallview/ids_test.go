package recallview_test

import (
	"math"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/views/recallview"
)

// TestStepDocsOfAnySessionID: a session ID may be any text of up to
// store.MaxIDLen bytes, and its documents' IDs ("<session>#<seq>") are
// still documents' IDs, whatever the sequence number.
func TestStepDocsOfAnySessionID(t *testing.T) {
	for _, id := range []string{strings.Repeat("é", store.MaxIDLen/2), "a/b#c ü", "user@example.com"} {
		if err := store.ValidateID(id); err != nil {
			t.Fatal(err)
		}
		sess := &store.Session{ID: id, Tenant: "acme", UserID: id, Agent: id}
		docs := recallview.StepDocs(sess, store.Entry{Seq: math.MaxInt64, Kind: store.StepEntry, Step: &agentmem.TaskStep{Task: "Fix the login bug"}})
		if len(docs) != 1 {
			t.Fatalf("%q: %d documents", id, len(docs))
		}
		if _, err := recall.CheckDoc(docs[0]); err != nil {
			t.Errorf("the document of a step of session %q: %v", id, err)
		}
	}
}
