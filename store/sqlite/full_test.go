package sqlite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// TestFullDatabase: an append into a database that cannot grow
// (max_page_count, as SQLite reports a full file system) fails with
// agentmem.ErrExhausted, stores nothing, and Ping says so until there is
// room again; then Ping is nil and the append succeeds, without reopening
// the store. The classes are the portable store's, from the driver's
// ClassifyError.
func TestFullDatabase(t *testing.T) {
	ctx := context.Background()
	d, _ := openTemp(t, nil)
	st := store.New(d)
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	var pages int64
	if err := d.w.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := d.w.Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages)); err != nil {
		t.Fatal(err)
	}
	big := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "big"}, Task: strings.Repeat("x", 256<<10)}
	_, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{big}})
	if !errors.Is(err, agentmem.ErrExhausted) || !errors.Is(err, agentmem.ErrUnavailable) {
		t.Fatalf("Append into a full database: %v, want ErrExhausted", err)
	}
	if err := st.Ping(ctx); !errors.Is(err, agentmem.ErrExhausted) {
		t.Fatalf("Ping of a full database: %v, want ErrExhausted", err)
	}
	if _, err := d.w.Exec(`PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
	if err := st.Ping(ctx); err != nil {
		t.Fatalf("Ping once there is room: %v", err)
	}
	resp, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{big}})
	if err != nil || resp.LastSeq != 1 {
		t.Fatalf("Append once there is room: %+v, %v", resp, err)
	}
}
