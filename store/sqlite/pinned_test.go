package sqlite

import (
	"context"
	"errors"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// TestPinnedKindOfOtherEncoding: a compaction's check of the pinned steps
// reads only the start of each step's body, where store.EncodeStep puts
// its type; a body that does not start that way (written by another
// version, say) is read whole and still counts.
func TestPinnedKindOfOtherEncoding(t *testing.T) {
	st, _ := openTemp(t, nil)
	ctx := context.Background()
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{
		actionStep("a1", 1, 100), taskStep("t2", "the task"), actionStep("a3", 3, 100),
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.w.ExecContext(ctx, `UPDATE entries SET body = ? WHERE session_id = 's' AND seq = 2`,
		[]byte(`{"number":2,"id":"t2","type":"task","task":"the task"}`)); err != nil {
		t.Fatal(err)
	}
	_, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Compaction: &store.CompactionRecord{Working: []int64{3}}})
	if !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("a compaction leaving out the task: %v, want ErrInvalid", err)
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Compaction: &store.CompactionRecord{Working: []int64{2, 3}}}); err != nil {
		t.Fatalf("a compaction keeping the task: %v", err)
	}
}
