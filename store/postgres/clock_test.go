package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// openSkewed opens a store on schema as a server whose clock is off by
// skew would, with the database's clock (no Options.Clock).
func openSkewed(t *testing.T, url, schema string, skew time.Duration) *Store {
	t.Helper()
	st, err := open(context.Background(), url, Options{Schema: schema}, func() time.Time { return time.Now().Add(skew) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestDatabaseClock: servers that share a database and whose clocks
// disagree by hours agree on when a TTL session expires, for they judge
// it by the database's clock: one whose clock runs ahead neither answers
// not found for a session that has not expired nor prunes it, and one
// whose clock runs behind does not serve a session that has.
func TestDatabaseClock(t *testing.T) {
	ctx := context.Background()
	url := testURL(t)
	schema := freshSchema(t, url)
	ahead := openSkewed(t, url, schema, time.Hour)
	behind := openSkewed(t, url, schema, -time.Hour)
	var dbNow time.Time
	if err := ahead.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&dbNow); err != nil {
		t.Fatal(err)
	}

	s, err := behind.Create(ctx, store.CreateRequest{ID: "ttl", TTL: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if d := s.ExpiresAt.Sub(dbNow.Add(10 * time.Minute)); d.Abs() > 5*time.Second {
		t.Errorf("expires at %v, %v from the database's now + 10 minutes", s.ExpiresAt, d)
	}
	if _, err := ahead.Get(ctx, "", "ttl"); err != nil {
		t.Errorf("Get on the server whose clock runs ahead: %v", err)
	}
	if resp, err := ahead.List(ctx, store.ListRequest{}); err != nil || len(resp.Sessions) != 1 {
		t.Errorf("List on the server whose clock runs ahead: %+v, %v", resp, err)
	}
	if _, err := ahead.Append(ctx, store.AppendRequest{SessionID: "ttl", Steps: []agentmem.Step{action("a", "x")}}); err != nil {
		t.Errorf("Append on the server whose clock runs ahead: %v", err)
	}
	if resp, err := ahead.Prune(ctx, store.PruneRequest{}); err != nil || resp.SessionsDeleted != 0 {
		t.Errorf("Prune on the server whose clock runs ahead: %+v, %v", resp, err)
	}

	// Expired a second ago by the database's clock.
	execSQL(t, ahead, `UPDATE sessions SET expires_at = clock_timestamp() - interval '1 second' WHERE id = 'ttl'`)
	if _, err := behind.Get(ctx, "", "ttl"); !errors.Is(err, agentmem.ErrNotFound) {
		t.Errorf("Get of an expired session on the server whose clock runs behind: %v", err)
	}
	resp, err := behind.Prune(ctx, store.PruneRequest{})
	if err != nil || resp.SessionsDeleted != 1 {
		t.Errorf("Prune on the server whose clock runs behind: %+v, %v", resp, err)
	}
}
