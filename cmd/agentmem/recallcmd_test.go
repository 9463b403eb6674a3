package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// Sessions written without indexing (as by a version before recall) are
// found once backfill has run.
func TestRecallBackfillAndSearch(t *testing.T) {
	url := "sqlite://" + filepath.Join(t.TempDir(), "agentmem.db")
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s1", UserID: "alice"}); err != nil {
		t.Fatal(err)
	}
	steps := []agentmem.Step{
		&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "t"}, Task: "Find why the staging deploy failed"},
		&agentmem.FinalAnswerStep{StepInfo: agentmem.StepInfo{ID: "f"}, Answer: "The migration locked the orders table"},
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s1", Steps: steps}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	env := map[string]string{"AGENTMEM_STORE": url}
	if code, out, errOut := runCLI(t, env, "", "recall", "search", "orders table"); code != 0 || out != "" {
		t.Fatalf("search before backfill: exit %d, %q %q", code, out, errOut)
	}
	code, out, errOut := runCLI(t, env, "", "recall", "backfill")
	if code != 0 || strings.TrimSpace(out) != `{"documents":2}` {
		t.Fatalf("backfill: exit %d, %q %q", code, out, errOut)
	}
	code, out, errOut = runCLI(t, env, "", "recall", "search", "orders table locked", "--k", "1", "--scope", "user:alice", "--before", "1")
	if code != 0 {
		t.Fatalf("search: exit %d, %q", code, errOut)
	}
	var hit struct {
		ID        string           `json:"id"`
		SessionID string           `json:"session_id"`
		Step      int64            `json:"step"`
		Window    []map[string]any `json:"window"`
	}
	if err := json.Unmarshal([]byte(out), &hit); err != nil || hit.ID != "s1#2" || hit.SessionID != "s1" || hit.Step != 2 || len(hit.Window) != 2 {
		t.Fatalf("search: %q (%v)", out, err)
	}
	if code, _, errOut := runCLI(t, env, "", "recall", "search", "x", "--scope", "team:a"); code != 2 || !strings.Contains(errOut, "scope") {
		t.Errorf("bad scope: exit %d, %q", code, errOut)
	}
	if code, _, _ := runCLI(t, env, "", "recall", "search"); code != 2 {
		t.Errorf("no query: exit %d", code)
	}
}
