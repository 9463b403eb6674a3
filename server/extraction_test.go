package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/views"
)

// TestFactExtractionStatus: /readyz and /metrics say whether this server
// holds the fact extraction's lease (it extracts) or waits for another
// server's, and which server holds it.
func TestFactExtractionStatus(t *testing.T) {
	leases := make(chan views.LeaseStatus, 10)
	noop := func(_ context.Context, changes []store.Change, _ store.FeedCursor) (int, error) { return 0, nil }
	var mem *store.Store
	var ours *views.Follower
	e := newEnv(t, func(c *Config) {
		mem = faultyOf(c.Store).Driver.(*store.Store)
		ours = views.NewFollower(mem, noop, views.Options{Consumer: "fact-extract", Exclusive: true, Holder: "this-server",
			LeasePoll: 5 * time.Millisecond, OnLease: func(l views.LeaseStatus) { leases <- l }})
		c.FactExtraction = ours
	})
	other := views.NewFollower(mem, noop, views.Options{Consumer: "fact-extract", Exclusive: true, Holder: "other-server"})
	stopOther := views.Start(other, nil)
	defer stopOther()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := other.Sync(ctx); err != nil { // it holds the lease
		t.Fatal(err)
	}
	stop := views.Start(ours, nil)
	defer stop()
	wait := func(held bool, holder string) {
		t.Helper()
		for {
			select {
			case l := <-leases:
				if l.Held == held && l.Holder == holder {
					return
				}
			case <-ctx.Done():
				t.Fatalf("never told that the lease is held %v by %q", held, holder)
			}
		}
	}
	wait(false, "other-server")
	var ready api.ReadyResponse
	e.must(200, "GET", "/readyz", nil).json(t, &ready)
	if x := ready.FactExtraction; x == nil || !x.Running || x.Lease == nil || x.Lease.Held || x.Lease.Holder != "other-server" {
		t.Fatalf("readyz while another server extracts: %+v", x)
	}
	if m := string(e.must(200, "GET", "/metrics", nil).body); !strings.Contains(m, "agentmem_fact_extraction_lease_held 0") {
		t.Fatal("/metrics: agentmem_fact_extraction_lease_held is not 0 while another server holds the lease")
	}
	stopOther() // it releases the lease
	wait(true, "this-server")
	e.must(200, "GET", "/readyz", nil).json(t, &ready)
	if x := ready.FactExtraction; x == nil || x.Lease == nil || !x.Lease.Held || x.Lease.Holder != "this-server" {
		t.Fatalf("readyz once this server took over: %+v", x)
	}
	if m := string(e.must(200, "GET", "/metrics", nil).body); !strings.Contains(m, "agentmem_fact_extraction_lease_held 1") {
		t.Fatal("/metrics: agentmem_fact_extraction_lease_held is not 1 while this server holds the lease")
	}
}
