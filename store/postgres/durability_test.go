package postgres

import (
	"context"
	neturl "net/url"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/testenv"
)

// TestAsyncCommits checks that AsyncCommits names the server when the
// store's connections commit asynchronously, and nothing otherwise.
func TestAsyncCommits(t *testing.T) {
	ctx := context.Background()
	url := testURL(t)
	st := openAt(t, url, Options{})
	if got, err := st.AsyncCommits(ctx); err != nil || len(got) != 0 {
		t.Fatalf("AsyncCommits with synchronous_commit on: %v, %v; want none", got, err)
	}

	// The same database, with connections that commit asynchronously
	// (a run-time parameter of the URL, as an operator's role or
	// database setting would make it).
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("synchronous_commit", "off")
	u.RawQuery = q.Encode()
	async := openAt(t, u.String(), Options{})
	got, err := async.AsyncCommits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"server"}) {
		t.Errorf("AsyncCommits with synchronous_commit off: %v, want [server]", got)
	}
}

// TestCitusAsyncCommits checks that AsyncCommits names a Citus worker
// whose commits, as Citus's connections to it see them, are
// asynchronous: the setting with which a shard move can lose an
// acknowledged append (TestCitusRebalance).
func TestCitusAsyncCommits(t *testing.T) {
	base := testenv.CitusURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dbURL, _, workers := citusDatabase(t, ctx, base)
	st := openAt(t, dbURL, Options{})
	if got, err := st.AsyncCommits(ctx); err != nil || len(got) != 0 {
		t.Fatalf("AsyncCommits with synchronous_commit on everywhere: %v, %v; want none", got, err)
	}

	// One worker commits asynchronously in this database.
	u, err := neturl.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	w := *u
	w.Host = workers[0]
	db := u.Path[1:]
	wc := connect(t, ctx, w.String())
	// Citus allows ALTER DATABASE on a worker only with its propagation
	// off (it propagates it from the coordinator).
	if _, err := wc.Exec(ctx, "SET citus.enable_ddl_propagation = off"); err != nil {
		t.Fatal(err)
	}
	if _, err := wc.Exec(ctx, "ALTER DATABASE "+db+" SET synchronous_commit = off"); err != nil {
		t.Fatal(err)
	}
	got, err := st.AsyncCommits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{workers[0]}) {
		t.Errorf("AsyncCommits with synchronous_commit off on %s: %v, want [%s]", workers[0], got, workers[0])
	}
}
