package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// CheckTenantUpgrade checks a store upgraded from a schema whose session
// IDs were global to one whose IDs are per tenant (migration sessions:3
// of the SQLite and PostgreSQL backends). Before the upgrade the test
// stored, in the old schema:
//
//   - session "a" of tenant "acme" with task steps "a1" and "a2" (seqs 1,
//     2);
//   - session "b" of "acme", a branch of "a" at seq 1, with step "b2";
//   - session "g" of tenant "globex" with step "g1".
//
// It checks that every log reads back in its tenant and that another
// tenant's session is not found. It checks that "a" is then free in
// "globex", and that the sessions have no settings but those created
// since. It checks that deleting "a" hands its history to its branch, and
// that an append after the upgrade reaches the feed (when the store has
// one) with its tenant.
// It changes the store.
func CheckTenantUpgrade(t testing.TB, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	ids := func(tenant, id string) []string {
		t.Helper()
		r, err := st.Read(ctx, store.ReadRequest{Tenant: tenant, SessionID: id})
		if err != nil {
			t.Fatalf("Read %s/%s: %v", tenant, id, err)
		}
		var out []string
		for _, e := range r.Entries {
			out = append(out, e.Step.Info().ID)
		}
		return out
	}
	if got := fmt.Sprint(ids("acme", "a"), ids("acme", "b"), ids("globex", "g")); got != "[a1 a2] [a1 b2] [g1]" {
		t.Fatalf("logs after the upgrade: %s", got)
	}
	if _, err := st.Get(ctx, "globex", "a"); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("acme's session seen from globex: %v", err)
	}
	if _, err := st.Create(ctx, store.CreateRequest{ID: "a", Tenant: "globex", Pinning: &agentmem.ChatPinning}); err != nil {
		t.Fatalf("the same ID in another tenant: %v", err)
	}
	// Sessions older than settings have none; a new one keeps its own.
	if s, err := st.Get(ctx, "acme", "a"); err != nil || s.Pinning != nil || s.AutoCompact != nil {
		t.Fatalf("a session from before the upgrade: %+v, %v", s, err)
	}
	if s, err := st.Get(ctx, "globex", "a"); err != nil || s.Pinning == nil || *s.Pinning != agentmem.ChatPinning {
		t.Fatalf("a session created after the upgrade: %+v, %v", s, err)
	}
	// Deleting the parent still hands its history to the branch.
	if err := st.Delete(ctx, "acme", "a"); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(ids("acme", "b")); got != "[a1 b2]" {
		t.Fatalf("branch after its parent's delete: %s", got)
	}
	task := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "b3"}, Task: "go on"}
	if _, err := st.Append(ctx, store.AppendRequest{Tenant: "acme", SessionID: "b", Steps: []agentmem.Step{task}}); err != nil {
		t.Fatal(err)
	}
	f, ok := st.Feed()
	if !ok {
		return
	}
	// The feed records the append with its tenant.
	var last store.Change
	for cur := (store.FeedCursor{}); ; {
		resp, err := f.ReadFeed(ctx, store.FeedRequest{After: cur})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(resp.Changes); n > 0 {
			last = resp.Changes[n-1]
		}
		if cur = resp.Next; !resp.More {
			break
		}
	}
	if last.Tenant != "acme" || last.SessionID != "b" || last.Seq != 3 || last.Entry == nil {
		t.Fatalf("newest change: %+v", last)
	}
}
