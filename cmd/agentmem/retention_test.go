package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
	blockssqlite "github.com/agentmem/agentmem/blocks/sqlite"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

func TestRunRetention(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	st := memstore.New(memstore.Options{Clock: clock})
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := st.Create(ctx, store.CreateRequest{ID: "short", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, store.CreateRequest{ID: "kept", Retention: store.Persistent}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()

	logs := &lockedBuffer{}
	done := make(chan struct{})
	go func() {
		runRetention(ctx, st, 5*time.Millisecond, slog.New(slog.NewTextHandler(logs, nil)))
		close(done)
	}()
	// An expired session's ID stays taken until retention deletes it.
	if _, err := st.Create(ctx, store.CreateRequest{ID: "short"}); !errors.Is(err, agentmem.ErrConflict) {
		t.Fatalf("before retention: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := st.Create(ctx, store.CreateRequest{ID: "short"})
		if err == nil {
			break
		}
		if !errors.Is(err, agentmem.ErrConflict) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the expired session was not pruned; logs: %s", logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := st.Get(ctx, "", "kept"); err != nil {
		t.Errorf("a persistent session was pruned: %v", err)
	}
	cancel()
	<-done
}

// TestServePrunesBlocks: serve's retention deletes an expired session, and
// its memory blocks go too (the session blocks cleaner follows the
// store's deletions); another session's stay.
func TestServePrunesBlocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentmem.db")
	s := serve(t, nil, "--addr", "127.0.0.1:0", "--store", "sqlite://"+path, "--prune-interval", "20ms")
	base := "http://" + s.addr
	for _, req := range [][3]string{
		{"POST", "/v1/sessions", `{"id":"brief","ttl_seconds":1}`},
		{"POST", "/v1/sessions", `{"id":"kept"}`},
		{"PUT", "/v1/sessions/brief/blocks/notes", `{"value":"gone soon"}`},
		{"PUT", "/v1/sessions/kept/blocks/notes", `{"value":"stays"}`},
	} {
		if code, body := call(t, http.DefaultClient, req[0], base+req[1], "", req[2]); code != 200 && code != 201 {
			t.Fatalf("%s %s: %d %s", req[0], req[1], code, body)
		}
	}
	bs, err := blockssqlite.Open(context.Background(), path, blockssqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	// The session expires after a second, retention runs every 20ms and
	// the cleaner polls the feed: wait for the blocks, up to a deadline.
	deadline := time.Now().Add(20 * time.Second)
	for {
		left, err := bs.List(context.Background(), "", blocks.Session("brief"))
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the expired session's blocks are still there: %+v\nlog:\n%s", left, s.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if kept, err := bs.List(context.Background(), "", blocks.Session("kept")); err != nil || len(kept) != 1 {
		t.Fatalf("the live session's blocks: %+v, %v", kept, err)
	}
}
