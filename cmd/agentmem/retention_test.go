package main

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
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
