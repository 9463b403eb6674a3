package remote_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/client/remote"
	"github.com/agentmem/agentmem/server"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/sqlite"
)

// TestListDamaged: a session the server's list leaves out as damaged is
// in the Store's ListResponse.Damaged, with its ID and why, and is
// reported to the context, as a store's List does.
func TestListDamaged(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentmem.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := server.New(server.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	cl, err := client.New(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := remote.New(cl)
	for _, id := range []string{"s1", "s2"} {
		if _, err := c.Create(ctx, store.CreateRequest{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE sessions SET metadata = '{"m":' WHERE id = 's2'`); err != nil {
		t.Fatal(err)
	}
	var reported []string
	rctx := agentmem.WithDamageReporter(ctx, func(d *agentmem.DamagedError) { reported = append(reported, d.ID) })
	resp, err := c.List(rctx, store.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Sessions) != 1 || resp.Sessions[0].ID != "s1" {
		t.Errorf("sessions %+v", resp.Sessions)
	}
	if len(resp.Damaged) != 1 || resp.Damaged[0].ID != "s2" || !errors.Is(resp.Damaged[0], agentmem.ErrDamaged) || resp.Damaged[0].Err == nil {
		t.Errorf("damaged %+v", resp.Damaged)
	}
	if len(reported) != 1 || reported[0] != "s2" {
		t.Errorf("reported %v", reported)
	}
}
