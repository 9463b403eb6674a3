package storetest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// store.AssignTenant moves a session created before the first API key
// (no tenant) into a tenant, through the store's Importer.

func (s *suite) assignTests() []namedTest {
	return []namedTest{
		{"MovesTheSessionWhole", func(t *testing.T) {
			e := s.open(t)
			e.importer()
			e.create(store.CreateRequest{ID: "old", UserID: "alice", Agent: "coder", Metadata: map[string]string{"k": "v"}})
			e.appendSteps("old", systemStep("sys"), taskStep("t", "the task"), actionStep("a1"), actionStep("a2"))
			e.append(store.AppendRequest{SessionID: "old", Compaction: &store.CompactionRecord{Working: []int64{1, 2, 4}, Removed: []int64{3}}})
			e.create(store.CreateRequest{ID: "other"})
			before := e.export("old")
			var backup bytes.Buffer
			moved, err := store.AssignTenant(e.ctx, e.st, "", "old", "acme", &backup)
			if err != nil {
				t.Fatal(err)
			}
			if backup.String() != before {
				t.Fatalf("the backup is not the session's export:\n%s\nwant\n%s", backup.String(), before)
			}
			got := e.get("acme/old")
			if moved.Tenant != "acme" || got.Tenant != "acme" || got.UserID != "alice" || got.Agent != "coder" || got.Metadata["k"] != "v" || got.LastSeq != 5 {
				t.Fatalf("moved session %s", sessionLine(got))
			}
			// Everything but the tenant is as it was, byte for byte.
			if after := e.export("acme/old"); !strings.Contains(after, `"tenant":"acme"`) || strings.Replace(after, `"tenant":"acme",`, "", 1) != before {
				t.Fatalf("export after the move:\n%s\nbefore:\n%s", after, before)
			}
			// The tenant reaches it, and only the tenant.
			if _, err := (store.Conversations{Store: e.st, Tenant: "acme"}).Get(e.ctx, "old"); err != nil {
				t.Fatalf("tenant acme does not reach the moved session: %v", err)
			}
			if _, err := (store.Conversations{Store: e.st}).Get(e.ctx, "old"); err == nil {
				t.Fatal("the moved session is still reached without a tenant")
			}
			e.append(store.AppendRequest{SessionID: "old", Steps: steps("n", 1), Tenant: "acme"})
			if g := e.get("other"); g.Tenant != "" {
				t.Fatalf("another session moved: %s", sessionLine(g))
			}
			if _, err := e.st.Get(e.ctx, "", "old"); !errors.Is(err, agentmem.ErrNotFound) {
				t.Fatalf("the session is still in its old tenant: %v", err)
			}
			// Already there: nothing to do, nothing written.
			backup.Reset()
			if _, err := store.AssignTenant(e.ctx, e.st, "acme", "old", "acme", &backup); err != nil || backup.Len() != 0 {
				t.Fatalf("assigning the tenant a session has: %v, backup of %d bytes", err, backup.Len())
			}
			// The new tenant has a session with that ID already: refused,
			// nothing changes.
			e.create(store.CreateRequest{ID: "old"})
			e.appendSteps("old", taskStep("t2", "another"))
			before = e.dump()
			_, err = store.AssignTenant(e.ctx, e.st, "", "old", "acme", nil)
			e.wantErr(err, agentmem.ErrConflict, "a move onto a session of the new tenant")
			e.wantUnchanged(before, "a refused move")
		}},
		{"BadInput", func(t *testing.T) {
			e := s.open(t)
			e.importer()
			e.create(store.CreateRequest{ID: "old"})
			e.appendSteps("old", taskStep("t", "x"))
			before := e.dump()
			var backup bytes.Buffer
			_, err := store.AssignTenant(e.ctx, e.st, "", "old", "bad\x00tenant", &backup)
			e.wantErr(err, agentmem.ErrInvalid, "a bad tenant")
			_, err = store.AssignTenant(e.ctx, e.st, "", "..", "acme", &backup)
			e.wantErr(err, agentmem.ErrInvalid, "a bad ID")
			_, err = store.AssignTenant(e.ctx, e.st, "", "missing", "acme", &backup)
			e.wantErr(err, agentmem.ErrNotFound, "a missing session")
			e.wantUnchanged(before, "refused moves")
			if backup.Len() != 0 {
				t.Fatalf("refused moves wrote a backup: %q", backup.String())
			}
		}},
	}
}
