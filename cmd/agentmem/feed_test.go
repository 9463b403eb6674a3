package main

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// TestFeedDropCursor: agentmem feed drop-cursor removes a retired
// consumer's cursor, which then no longer holds back the changes the
// other consumer has read.
func TestFeedDropCursor(t *testing.T) {
	url := newStoreURL(t, "feed.db")
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := st.Feed()
	for _, c := range []string{"old", "live"} {
		if err := f.SaveCursor(ctx, c, store.FeedCursor{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{&agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "t1"}, Task: "a"}, &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "t2"}, Task: "b"}}}); err != nil {
		t.Fatal(err)
	}
	resp, err := f.ReadFeed(ctx, store.FeedRequest{})
	if err != nil || len(resp.Changes) != 2 {
		t.Fatalf("feed: %+v, %v", resp, err)
	}
	if err := f.SaveCursor(ctx, "live", resp.Next); err != nil {
		t.Fatal(err)
	}
	st.Close()

	code, stdout, stderr := runCLI(t, nil, "", "feed", "cursor", "live", "--store", url)
	if code != 0 || !strings.Contains(stdout, "live") || !strings.Contains(stdout, "pos") {
		t.Fatalf("feed cursor: exit %d, %q, %q", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, nil, "", "feed", "drop-cursor", "old", "--store", url)
	if code != 0 || !strings.Contains(stdout, "dropped") {
		t.Fatalf("feed drop-cursor: exit %d, %q, %q", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, nil, "", "feed", "drop-cursor", "a/b", "--store", url); code != 2 || stderr == "" {
		t.Fatalf("a bad consumer name: exit %d, %q; want a usage error", code, stderr)
	}

	st = openTestStore(t, url)
	f, _ = st.Feed()
	if c, err := f.LoadCursor(ctx, "old"); err != nil || c != (store.FeedCursor{}) {
		t.Fatalf("the dropped cursor: %+v, %v", c, err)
	}
	resp, err = f.ReadFeed(ctx, store.FeedRequest{})
	if err != nil || len(resp.Changes) != 0 {
		t.Fatalf("after the drop, the changes every remaining consumer read are kept: %+v, %v", resp, err)
	}
}
