package storetest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// tenantTests check that every tenant has an ID space of its own: the
// same ID in two tenants names two sessions, and a request in one tenant
// cannot tell another tenant's session from a missing one, on any method.
func (s *suite) tenantTests() []namedTest {
	return []namedTest{
		{"SameIDTwoTenants", func(t *testing.T) {
			e := s.open(t)
			a := e.create(store.CreateRequest{ID: "shared-x", Tenant: "acme", UserID: "ua"})
			g := e.create(store.CreateRequest{ID: "shared-x", Tenant: "globex", UserID: "ug"})
			d := e.create(store.CreateRequest{ID: "shared-x"}) // the default tenant
			if a.Tenant != "acme" || g.Tenant != "globex" || d.Tenant != "" {
				t.Fatalf("tenants: %q %q %q", a.Tenant, g.Tenant, d.Tenant)
			}
			e.wantSeqs(e.append(store.AppendRequest{Tenant: "acme", SessionID: "shared-x", Steps: steps("a", 2)}).Seqs, []int64{1, 2}, "acme's append")
			e.wantSeqs(e.append(store.AppendRequest{Tenant: "globex", SessionID: "shared-x", Steps: steps("a", 1)}).Seqs, []int64{1}, "globex's append, same step ID")
			for _, tc := range []struct {
				tenant, user string
				last         int64
			}{{"acme", "ua", 2}, {"globex", "ug", 1}, {"", "", 0}} {
				got, err := e.st.Get(e.ctx, tc.tenant, "shared-x")
				if err != nil {
					t.Fatalf("Get in %q: %v", tc.tenant, err)
				}
				if got.Tenant != tc.tenant || got.UserID != tc.user || got.LastSeq != tc.last {
					t.Fatalf("Get in %q = %+v, want user %q, last seq %d", tc.tenant, got, tc.user, tc.last)
				}
				if h, err := e.st.Head(e.ctx, tc.tenant, "shared-x"); err != nil || h.LastSeq != tc.last || !h.CreatedAt.Equal(got.CreatedAt) {
					t.Fatalf("ReadHead in %q = %+v, %v; want last seq %d", tc.tenant, h, err, tc.last)
				}
				r := e.read(store.ReadRequest{Tenant: tc.tenant, SessionID: "shared-x"})
				if int64(len(r.Entries)) != tc.last || r.Session.Tenant != tc.tenant {
					t.Fatalf("Read in %q: %d entries, session %+v", tc.tenant, len(r.Entries), r.Session)
				}
			}
			_, err := e.st.Create(e.ctx, store.CreateRequest{ID: "shared-x", Tenant: "acme"})
			e.wantExists(err, "shared-x", "an ID in use in its own tenant")

			// List pages through all three, each once, in order.
			var got []string
			req := store.ListRequest{PageSize: 1}
			for {
				page, err := e.st.List(e.ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range page.Sessions {
					got = append(got, s.Tenant+"/"+s.ID)
				}
				if req.PageToken = page.NextPageToken; req.PageToken == "" {
					break
				}
			}
			if fmt.Sprint(got) != "[globex/shared-x acme/shared-x /shared-x]" {
				t.Fatalf("List pages: %v", got)
			}

			// Deleting one leaves the others.
			if err := e.st.Delete(e.ctx, "globex", "shared-x"); err != nil {
				t.Fatal(err)
			}
			_, err = e.st.Get(e.ctx, "globex", "shared-x")
			e.wantErr(err, agentmem.ErrNotFound, "the deleted one")
			if got, err := e.st.Get(e.ctx, "acme", "shared-x"); err != nil || got.LastSeq != 2 {
				t.Fatalf("acme's after globex's delete: %+v, %v", got, err)
			}
		}},
		{"OtherTenantIsMissing", func(t *testing.T) {
			// Every method answers for another tenant's session exactly
			// as for a missing one, and changes nothing.
			e := s.open(t)
			e.create(store.CreateRequest{ID: "a", Tenant: "acme"})
			e.append(store.AppendRequest{Tenant: "acme", SessionID: "a", Steps: steps("a", 2)})
			before := e.dump()
			for _, id := range []string{"a", "missing"} {
				for _, tenant := range []string{"globex", ""} {
					what := fmt.Sprintf("%s of %q in tenant %q", "%s", id, tenant)
					_, err := e.st.Get(e.ctx, tenant, id)
					e.wantErr(err, agentmem.ErrNotFound, fmt.Sprintf(what, "Get"))
					_, err = e.st.Head(e.ctx, tenant, id)
					e.wantErr(err, agentmem.ErrNotFound, fmt.Sprintf(what, "ReadHead"))
					_, err = e.st.Read(e.ctx, store.ReadRequest{Tenant: tenant, SessionID: id})
					e.wantErr(err, agentmem.ErrNotFound, fmt.Sprintf(what, "Read"))
					_, err = e.st.Read(e.ctx, store.ReadRequest{Tenant: tenant, SessionID: id, WorkingSet: true})
					e.wantErr(err, agentmem.ErrNotFound, fmt.Sprintf(what, "Read of the working set"))
					_, err = e.st.Append(e.ctx, store.AppendRequest{Tenant: tenant, SessionID: id, Steps: steps("x", 1)})
					e.wantErr(err, agentmem.ErrNotFound, fmt.Sprintf(what, "Append"))
					_, err = e.st.Append(e.ctx, store.AppendRequest{Tenant: tenant, SessionID: id, Steps: steps("a", 1)})
					e.wantErr(err, agentmem.ErrNotFound, fmt.Sprintf(what, "Append of a stored step ID"))
					_, err = e.st.Append(e.ctx, store.AppendRequest{Tenant: tenant, SessionID: id, Compaction: &store.CompactionRecord{Working: []int64{}}})
					e.wantErr(err, agentmem.ErrNotFound, fmt.Sprintf(what, "a compaction"))
					_, err = e.st.Create(e.ctx, store.CreateRequest{Tenant: tenant, ID: "branch-" + tenant, ParentID: id})
					e.wantErr(err, agentmem.ErrNotFound, fmt.Sprintf(what, "a fork"))
					err = e.st.Delete(e.ctx, tenant, id)
					e.wantErr(err, agentmem.ErrNotFound, fmt.Sprintf(what, "Delete"))
					var buf bytes.Buffer
					err = store.Export(e.ctx, e.st, tenant, id, &buf)
					e.wantErr(err, agentmem.ErrNotFound, fmt.Sprintf(what, "Export"))
				}
			}
			e.wantUnchanged(before, "requests in other tenants")
		}},
		{"BranchInItsTenant", func(t *testing.T) {
			// A branch is created in its parent's tenant and reads the
			// parent of that tenant, not a namesake in another.
			e := s.open(t)
			e.create(store.CreateRequest{ID: "p", Tenant: "acme"})
			e.append(store.AppendRequest{Tenant: "acme", SessionID: "p", Steps: steps("acme", 3)})
			e.create(store.CreateRequest{ID: "p", Tenant: "globex"})
			e.append(store.AppendRequest{Tenant: "globex", SessionID: "p", Steps: steps("globex", 1)})
			b := e.create(store.CreateRequest{ID: "b", Tenant: "acme", ParentID: "p", ForkSeq: 2})
			if b.Tenant != "acme" || b.ParentID != "p" || b.LastSeq != 2 {
				t.Fatalf("branch: %+v", b)
			}
			r := e.read(store.ReadRequest{Tenant: "acme", SessionID: "b"})
			if len(r.Entries) != 2 || r.Entries[0].Step.Info().ID != "acme-1" {
				t.Fatalf("branch reads %d entries, first %v", len(r.Entries), r.Entries)
			}
			// Deleting acme's parent copies its history into the branch;
			// globex's namesake is untouched.
			if err := e.st.Delete(e.ctx, "acme", "p"); err != nil {
				t.Fatal(err)
			}
			r = e.read(store.ReadRequest{Tenant: "acme", SessionID: "b"})
			if len(r.Entries) != 2 || r.Entries[1].Step.Info().ID != "acme-2" {
				t.Fatalf("branch after its parent's delete: %v", r.Entries)
			}
			if g := e.read(store.ReadRequest{Tenant: "globex", SessionID: "p"}); len(g.Entries) != 1 {
				t.Fatalf("globex's p: %v", g.Entries)
			}
		}},
	}
}
