package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// wantSettings checks that List returns the sessions of wants, no more,
// and that each shows its settings both listed and got: shows(line, want)
// reports whether the session's line (sessionLine) has them.
func (e *env) wantSettings(wants map[string]string, shows func(line, want string) bool) {
	e.t.Helper()
	resp, err := e.st.List(e.ctx, store.ListRequest{})
	if err != nil {
		e.t.Fatal(err)
	}
	if len(resp.Sessions) != len(wants) {
		e.t.Fatalf("List returned %d sessions, want %d", len(resp.Sessions), len(wants))
	}
	for _, sess := range resp.Sessions {
		w := wants[sess.ID]
		if !shows(sessionLine(sess), w) {
			e.t.Errorf("List: %s\nwant %s", sessionLine(sess), w)
		}
		if got := sessionLine(e.get(sess.ID)); !shows(got, w) {
			e.t.Errorf("Get: %s\nwant %s", got, w)
		}
	}
}

func (s *suite) sessionTests() []namedTest {
	return []namedTest{
		{"CreateDefaults", func(t *testing.T) {
			e := s.open(t)
			got := e.create(store.CreateRequest{ID: "s1"})
			if got.ID != "s1" || got.Retention != store.SessionRetention || got.LastSeq != 0 ||
				got.ParentID != "" || got.ForkSeq != 0 || !got.ExpiresAt.IsZero() || len(got.Metadata) != 0 {
				t.Fatalf("Create returned %s", sessionLine(got))
			}
			e.wantTime(got.CreatedAt, Epoch, "CreatedAt")
			e.wantTime(got.UpdatedAt, Epoch, "UpdatedAt")
			if line := sessionLine(e.get("s1")); line != sessionLine(got) {
				t.Fatalf("Get returned\n%s\nCreate returned\n%s", line, sessionLine(got))
			}
		}},
		{"CreateAllFields", func(t *testing.T) {
			e := s.open(t)
			req := store.CreateRequest{
				ID: "tenant-a:run.42_x", Tenant: "acme", UserID: "user-7", Agent: "researcher",
				Metadata:  map[string]string{"k": "v", "émoji": "✓", "empty": ""},
				Retention: store.SingleRun, TTL: 90 * time.Minute,
			}
			got := e.create(req)
			want := &store.Session{ID: req.ID, Tenant: "acme", UserID: "user-7", Agent: "researcher",
				Metadata: req.Metadata, Retention: store.SingleRun, ExpiresAt: Epoch.Add(90 * time.Minute),
				CreatedAt: Epoch, UpdatedAt: Epoch}
			if sessionLine(got) != sessionLine(want) {
				t.Fatalf("Create returned\n%s\nwant\n%s", sessionLine(got), sessionLine(want))
			}
			if sessionLine(e.get("acme/"+req.ID)) != sessionLine(want) {
				t.Fatalf("Get returned\n%s\nwant\n%s", sessionLine(e.get("acme/"+req.ID)), sessionLine(want))
			}
			p := e.create(store.CreateRequest{ID: "p", Retention: store.Persistent})
			if p.Retention != store.Persistent || !p.ExpiresAt.IsZero() {
				t.Fatalf("persistent session: %s", sessionLine(p))
			}
		}},
		{"CreateGeneratesID", func(t *testing.T) {
			e := s.open(t)
			a := e.create(store.CreateRequest{})
			b := e.create(store.CreateRequest{})
			if err := store.ValidateID(a.ID); err != nil || a.ID == b.ID {
				t.Fatalf("generated IDs %q and %q (%v)", a.ID, b.ID, err)
			}
			e.get(a.ID)
			e.get(b.ID)
		}},
		{"CreateDuplicateIsConflict", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "dup", Agent: "first"})
			e.appendSteps("dup", taskStep("t", "x"))
			before := e.dump()
			_, err := e.st.Create(e.ctx, store.CreateRequest{ID: "dup", Agent: "second"})
			e.wantExists(err, "dup", "Create of an existing ID")
			e.wantUnchanged(before, "a refused Create")
		}},
		{"CreateDuplicateIsConflictFirst", func(t *testing.T) {
			// An ID in use is a conflict whatever else is wrong with the
			// request: here its parent is missing too.
			e := s.open(t)
			e.create(store.CreateRequest{ID: "dup"})
			before := e.dump()
			_, err := e.st.Create(e.ctx, store.CreateRequest{ID: "dup", ParentID: "no-such-parent"})
			e.wantExists(err, "dup", "Create of an existing ID with a missing parent")
			e.wantUnchanged(before, "a refused Create")
		}},
		{"CopiesInAndOut", func(t *testing.T) {
			e := s.open(t)
			md := map[string]string{"a": "1"}
			got := e.create(store.CreateRequest{ID: "c", Metadata: md})
			md["a"] = "changed by caller"
			got.Metadata["a"] = "changed via result"
			got.Agent = "changed"
			again := e.get("c")
			if again.Metadata["a"] != "1" || again.Agent != "" {
				t.Fatalf("the store kept a caller's map or struct: %s", sessionLine(again))
			}
			again.Metadata["a"] = "changed via Get"
			if e.get("c").Metadata["a"] != "1" {
				t.Fatal("changing a session Get returned changed the store")
			}
		}},
		{"Settings", func(t *testing.T) {
			// A session's pinning and automatic compaction are stored,
			// returned by Create, Get and List, and copied in and out.
			e := s.open(t)
			pin := &agentmem.Pinning{SystemPrompts: true}
			auto := &store.AutoCompact{MaxTokens: 8000, TargetTokens: 3000, KeepRecent: 4, Summarizer: store.SummarizerExtractive}
			got := e.create(store.CreateRequest{ID: "set", Pinning: pin, AutoCompact: auto})
			want := "pin={SystemPrompts:true FirstTask:false Tasks:false Summary:false} auto={MaxTokens:8000 TargetTokens:3000 KeepRecent:4 Summarizer:extractive}"
			if line := sessionLine(got); !strings.HasSuffix(line, want) {
				t.Fatalf("Create returned %s\nwant settings %s", line, want)
			}
			pin.SystemPrompts, auto.MaxTokens = false, 1
			got.Pinning.Tasks, got.AutoCompact.KeepRecent = true, 99
			if line := sessionLine(e.get("set")); !strings.HasSuffix(line, want) {
				t.Fatalf("Get returned %s after the caller changed its values\nwant settings %s", line, want)
			}
			e.get("set").Pinning.Summary = true
			if line := sessionLine(e.get("set")); !strings.HasSuffix(line, want) {
				t.Fatalf("changing a session Get returned changed the store: %s", line)
			}
			e.create(store.CreateRequest{ID: "other", Pinning: &agentmem.ChatPinning})
			resp, err := e.st.List(e.ctx, store.ListRequest{})
			if err != nil {
				t.Fatal(err)
			}
			wants := map[string]string{"set": want, "other": "pin={SystemPrompts:true FirstTask:false Tasks:false Summary:true}"}
			if len(resp.Sessions) != len(wants) {
				t.Fatalf("List returned %d sessions, want %d", len(resp.Sessions), len(wants))
			}
			for _, sess := range resp.Sessions {
				if line := sessionLine(sess); !strings.Contains(line, wants[sess.ID]) {
					t.Errorf("List: %s\nwant settings %s", line, wants[sess.ID])
				}
			}
		}},
		{"SettingsAsGiven", func(t *testing.T) {
			// Settings are stored as given: a session without them has
			// none (nil: the defaults), one with some only those, and a
			// branch the ones it is created with, not its parent's
			// (sessions.Service.Fork passes the parent's).
			e := s.open(t)
			e.create(store.CreateRequest{ID: "pin-only", Pinning: &agentmem.Pinning{}})
			e.create(store.CreateRequest{ID: "auto-only", AutoCompact: &store.AutoCompact{MaxTokens: 100, Summarizer: store.SummarizerLLM}})
			e.create(store.CreateRequest{ID: "none"})
			e.appendSteps("auto-only", taskStep("t1", "x"))
			e.create(store.CreateRequest{ID: "branch", ParentID: "auto-only"})
			e.create(store.CreateRequest{ID: "branch2", ParentID: "auto-only", Pinning: &agentmem.ChatPinning})
			wants := map[string]string{
				"pin-only":  "pin={SystemPrompts:false FirstTask:false Tasks:false Summary:false} auto=-",
				"auto-only": "pin=- auto={MaxTokens:100 TargetTokens:0 KeepRecent:0 Summarizer:llm}",
				"none":      "pin=- auto=-",
				"branch":    "pin=- auto=-",
				"branch2":   "pin={SystemPrompts:true FirstTask:false Tasks:false Summary:true} auto=-",
			}
			e.wantSettings(wants, strings.HasSuffix)
		}},
		{"ExtractFactsSetting", func(t *testing.T) {
			// A session's extraction switch is stored as given, alone or
			// with other settings (true, false, or absent: nil), returned
			// by Create, Get and List, and copied in and out; a branch
			// has its own, not its parent's.
			e := s.open(t)
			on, off := true, false
			got := e.create(store.CreateRequest{ID: "in", UserID: "u", ExtractFacts: &on})
			e.create(store.CreateRequest{ID: "out", UserID: "u", ExtractFacts: &off, Pinning: &agentmem.Pinning{Tasks: true}})
			e.create(store.CreateRequest{ID: "default", UserID: "u"})
			e.appendSteps("in", taskStep("t1", "x"))
			e.create(store.CreateRequest{ID: "branch", ParentID: "in", UserID: "u"})
			e.create(store.CreateRequest{ID: "branch-out", ParentID: "in", UserID: "u", ExtractFacts: &off})
			on = false
			*got.ExtractFacts = false
			wants := map[string]string{"in": "extract=true pin=-", "out": "extract=false pin={", "default": "extract=- pin=-",
				"branch": "extract=- pin=-", "branch-out": "extract=false pin=-"}
			e.wantSettings(wants, strings.Contains)
			*e.get("in").ExtractFacts = false
			if got := sessionLine(e.get("in")); !strings.Contains(got, wants["in"]) {
				t.Fatalf("changing a session Get returned changed the store: %s", got)
			}
		}},
		{"BadSettings", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "keep"})
			before := e.dump()
			for field, a := range map[string]*store.AutoCompact{
				"auto_compact.max_tokens":     {},
				"auto_compact.max_tokens ":    {MaxTokens: -5},
				"auto_compact.max_tokens  ":   {MaxTokens: store.MaxAutoCompactTokens + 1},
				"auto_compact.target_tokens":  {MaxTokens: 100, TargetTokens: 100},
				"auto_compact.target_tokens ": {MaxTokens: 100, TargetTokens: -1},
				"auto_compact.keep_recent":    {MaxTokens: 100, KeepRecent: -1},
				"auto_compact.summarizer":     {MaxTokens: 100, Summarizer: "abstractive"},
			} {
				_, err := e.st.Create(e.ctx, store.CreateRequest{ID: "bad", AutoCompact: a})
				var inv *agentmem.InvalidError
				if !errors.As(err, &inv) || inv.Field != strings.TrimSpace(field) {
					t.Errorf("Create with auto_compact %+v: %v, want an *InvalidError for %s", *a, err, strings.TrimSpace(field))
				}
			}
			e.wantUnchanged(before, "refused Creates")
		}},
		{"GetMissing", func(t *testing.T) {
			e := s.open(t)
			_, err := e.st.Get(e.ctx, "", "nope")
			e.wantErr(err, agentmem.ErrNotFound, "Get of a missing session")
		}},
		{"Delete", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "d"})
			e.appendSteps("d", steps("d", 3)...)
			e.create(store.CreateRequest{ID: "other"})
			e.appendSteps("other", taskStep("o1", "keep me"))
			if err := e.st.Delete(e.ctx, "", "d"); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			_, err := e.st.Get(e.ctx, "", "d")
			e.wantErr(err, agentmem.ErrNotFound, "Get after Delete")
			_, err = e.st.Read(e.ctx, store.ReadRequest{SessionID: "d"})
			e.wantErr(err, agentmem.ErrNotFound, "Read after Delete")
			_, err = e.st.Append(e.ctx, store.AppendRequest{SessionID: "d", Steps: steps("late", 1)})
			e.wantErr(err, agentmem.ErrNotFound, "Append after Delete")
			e.wantErr(e.st.Delete(e.ctx, "", "d"), agentmem.ErrNotFound, "second Delete")
			e.wantErr(e.st.Delete(e.ctx, "", "never"), agentmem.ErrNotFound, "Delete of a missing session")
			if n := len(e.entries("other")); n != 1 {
				t.Fatalf("Delete touched another session: it has %d entries", n)
			}
			// The ID can be used again, for a new, empty session.
			e.clock.Advance(time.Second)
			again := e.create(store.CreateRequest{ID: "d"})
			if again.LastSeq != 0 || len(e.entries("d")) != 0 {
				t.Fatalf("a re-created session has old data: %s, %d entries", sessionLine(again), len(e.entries("d")))
			}
			e.wantSeqs(e.appendSteps("d", steps("d2", 1)...), []int64{1}, "first append to a re-created session")
		}},
		{"Head", func(t *testing.T) {
			// store.ReadHead reads what Get says of a session's log, its
			// creation time and last sequence number, and fails as Get
			// does: the context cache checks it before every use.
			e := s.open(t)
			want := func(key string) {
				t.Helper()
				tenant, id := splitKey(key)
				h, err := e.st.Head(e.ctx, tenant, id)
				if err != nil {
					t.Fatalf("ReadHead(%q): %v", key, err)
				}
				g := e.get(key)
				if !h.CreatedAt.Equal(g.CreatedAt) || h.LastSeq != g.LastSeq {
					t.Fatalf("ReadHead(%q) = %v, %d; Get says %v, %d", key, h.CreatedAt, h.LastSeq, g.CreatedAt, g.LastSeq)
				}
			}
			gone := func(tenant, id, what string) {
				t.Helper()
				_, err := e.st.Head(e.ctx, tenant, id)
				e.wantErr(err, agentmem.ErrNotFound, what)
			}
			e.create(store.CreateRequest{ID: "h", TTL: time.Hour})
			want("h")
			e.appendSteps("h", steps("h", 3)...)
			want("h")
			gone("", "never", "ReadHead of a missing session")
			_, err := e.st.Head(e.ctx, "", "")
			e.wantErr(err, agentmem.ErrInvalid, "ReadHead without an ID")
			// Deleted and created again: another creation time.
			first := e.get("h").CreatedAt
			if err := e.st.Delete(e.ctx, "", "h"); err != nil {
				t.Fatal(err)
			}
			gone("", "h", "ReadHead after Delete")
			e.clock.Advance(time.Second)
			e.create(store.CreateRequest{ID: "h", TTL: time.Hour})
			want("h")
			if h, _ := e.st.Head(e.ctx, "", "h"); h.CreatedAt.Equal(first) || h.LastSeq != 0 {
				t.Fatalf("the head of a re-created session: %v, %d", h.CreatedAt, h.LastSeq)
			}
			// Expired: not found, as by Get, but a persistent session.
			e.create(store.CreateRequest{ID: "p", Retention: store.Persistent})
			e.clock.Advance(2 * time.Hour)
			gone("", "h", "ReadHead of an expired session")
			want("p")
		}},
	}
}

func (s *suite) listTests() []namedTest {
	return []namedTest{
		{"NewestFirstPaged", func(t *testing.T) {
			e := s.open(t)
			var ids []string
			for i := range 7 {
				id := fmt.Sprintf("s%d", i)
				e.create(store.CreateRequest{ID: id})
				ids = append(ids, id)
				e.clock.Advance(time.Second)
			}
			slices.Reverse(ids)
			got := e.listAll(store.ListRequest{PageSize: 3}, 3)
			if !slices.Equal(got, ids) {
				t.Fatalf("List order %v, want %v", got, ids)
			}
			resp, err := e.st.List(e.ctx, store.ListRequest{})
			if err != nil || len(resp.Sessions) != 7 || resp.NextPageToken != "" {
				t.Fatalf("List with default page size: %d sessions, token %q, %v", len(resp.Sessions), resp.NextPageToken, err)
			}
		}},
		{"SameCreationTime", func(t *testing.T) {
			e := s.open(t)
			var ids []string
			for i := range 9 {
				id := fmt.Sprintf("tie-%d", i)
				e.create(store.CreateRequest{ID: id})
				ids = append(ids, id)
			}
			slices.Sort(ids)
			slices.Reverse(ids)
			if got := e.listAll(store.ListRequest{PageSize: 2}, 2); !slices.Equal(got, ids) {
				t.Fatalf("List of sessions created at one instant: %v, want %v (ID descending)", got, ids)
			}
		}},
		{"PagesSeeNewSessionsOnlyFirst", func(t *testing.T) {
			e := s.open(t)
			for i := range 4 {
				e.create(store.CreateRequest{ID: fmt.Sprintf("old%d", i)})
				e.clock.Advance(time.Second)
			}
			first, err := e.st.List(e.ctx, store.ListRequest{PageSize: 2})
			if err != nil {
				t.Fatal(err)
			}
			e.create(store.CreateRequest{ID: "newer"})
			rest := e.listAll(store.ListRequest{PageSize: 2, PageToken: first.NextPageToken}, 2)
			if !slices.Equal(rest, []string{"old1", "old0"}) {
				t.Fatalf("the second page after a new session was created: %v", rest)
			}
		}},
		{"Filters", func(t *testing.T) {
			e := s.open(t)
			for _, r := range []store.CreateRequest{
				{ID: "a1", Tenant: "t1", UserID: "u1", Agent: "planner"},
				{ID: "a2", Tenant: "t1", UserID: "u1", Agent: "coder"},
				{ID: "a3", Tenant: "t1", UserID: "u2", Agent: "planner"},
				{ID: "a4", Tenant: "t2", UserID: "u1", Agent: "planner"},
				{ID: "a5"},
			} {
				e.create(r)
				e.clock.Advance(time.Millisecond)
			}
			for _, c := range []struct {
				req  store.ListRequest
				want []string
			}{
				{store.ListRequest{}, []string{"a5", "a4", "a3", "a2", "a1"}},
				{store.ListRequest{Tenant: "t1"}, []string{"a3", "a2", "a1"}},
				{store.ListRequest{UserID: "u1"}, []string{"a4", "a2", "a1"}},
				{store.ListRequest{Agent: "planner"}, []string{"a4", "a3", "a1"}},
				{store.ListRequest{Tenant: "t1", UserID: "u1", Agent: "planner"}, []string{"a1"}},
				{store.ListRequest{Tenant: "t1", Agent: "planner", PageSize: 1}, []string{"a3", "a1"}},
				{store.ListRequest{Tenant: "nobody"}, nil},
				// ExactTenant: the default tenant's sessions alone.
				{store.ListRequest{ExactTenant: true}, []string{"a5"}},
				{store.ListRequest{ExactTenant: true, PageSize: 1}, []string{"a5"}},
				{store.ListRequest{ExactTenant: true, UserID: "u1"}, nil},
				{store.ListRequest{Tenant: "t1", ExactTenant: true, UserID: "u1"}, []string{"a2", "a1"}},
			} {
				if got := e.listAll(c.req, 0); !slices.Equal(got, c.want) {
					t.Errorf("List(%+v) = %v, want %v", c.req, got, c.want)
				}
			}
		}},
		{"ByParent", func(t *testing.T) {
			e := s.open(t)
			e.parentWith5("p")
			e.create(store.CreateRequest{ID: "q"})
			e.appendSteps("q", steps("q", 1)...)
			for _, r := range []store.CreateRequest{
				{ID: "b1", ParentID: "p", ForkSeq: 2},
				{ID: "qb", ParentID: "q", ForkSeq: 1},
				{ID: "b2", ParentID: "p"}, // at the parent's last entry
				{ID: "c", ParentID: "b1", ForkSeq: 1},
				{ID: "b3", ParentID: "p", ForkSeq: 5},
			} {
				e.clock.Advance(time.Second)
				e.create(r)
			}
			for _, c := range []struct {
				req  store.ListRequest
				want []string
			}{
				// A session's branches, newest first; not its branches'
				// branches.
				{store.ListRequest{ParentID: "p"}, []string{"b3", "b2", "b1"}},
				{store.ListRequest{ParentID: "p", PageSize: 1}, []string{"b3", "b2", "b1"}},
				{store.ListRequest{ParentID: "p", PageSize: 2}, []string{"b3", "b2", "b1"}},
				{store.ListRequest{ParentID: "b1"}, []string{"c"}},
				{store.ListRequest{ParentID: "q"}, []string{"qb"}},
				{store.ListRequest{ParentID: "c"}, nil},
				{store.ListRequest{ParentID: "nobody"}, nil},
				{store.ListRequest{ParentID: "p", ExactTenant: true}, []string{"b3", "b2", "b1"}},
			} {
				if got := e.listAll(c.req, c.req.PageSize); !slices.Equal(got, c.want) {
					t.Errorf("List(%+v) = %v, want %v", c.req, got, c.want)
				}
			}
			// ParentID records where a branch came from: the branches of
			// a deleted session are still listed by it.
			if err := e.st.Delete(e.ctx, "", "p"); err != nil {
				t.Fatal(err)
			}
			if got := e.listAll(store.ListRequest{ParentID: "p"}, 0); !slices.Equal(got, []string{"b3", "b2", "b1"}) {
				t.Errorf("the branches of a deleted session: %v, want [b3 b2 b1]", got)
			}
			for _, bad := range []string{"bad\nid", strings.Repeat("x", store.MaxIDLen+1), ".."} {
				_, err := e.st.List(e.ctx, store.ListRequest{ParentID: bad})
				e.wantErr(err, agentmem.ErrInvalid, fmt.Sprintf("List with parent ID %q", bad))
			}
		}},
		{"ByParentTenant", func(t *testing.T) {
			e := s.open(t)
			for _, tenant := range []string{"t1", "t2"} {
				e.create(store.CreateRequest{ID: "p", Tenant: tenant})
				e.appendSteps(tenant+"/p", steps(tenant+"-p", 2)...)
				e.clock.Advance(time.Second)
				e.create(store.CreateRequest{ID: "b-" + tenant, Tenant: tenant, ParentID: "p", ForkSeq: 1})
				e.clock.Advance(time.Second)
			}
			for _, c := range []struct {
				req  store.ListRequest
				want []string
			}{
				{store.ListRequest{Tenant: "t1", ParentID: "p"}, []string{"b-t1"}},
				{store.ListRequest{Tenant: "t2", ParentID: "p"}, []string{"b-t2"}},
				{store.ListRequest{ParentID: "p"}, []string{"b-t2", "b-t1"}},
				{store.ListRequest{ExactTenant: true, ParentID: "p"}, nil},
			} {
				if got := e.listAll(c.req, 0); !slices.Equal(got, c.want) {
					t.Errorf("List(%+v) = %v, want %v", c.req, got, c.want)
				}
			}
		}},
		{"PageSizeBounds", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "x"})
			_, err := e.st.List(e.ctx, store.ListRequest{PageSize: -1})
			e.wantErr(err, agentmem.ErrInvalid, "List with a negative page size")
			resp, err := e.st.List(e.ctx, store.ListRequest{PageSize: 1_000_000})
			if err != nil || len(resp.Sessions) != 1 {
				t.Fatalf("List with a huge page size: %v", err)
			}
		}},
		{"BadPageToken", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "x"})
			for _, tok := range []string{"not a token", "%%%", "AAAA", strings.Repeat("z", 50)} {
				_, err := e.st.List(e.ctx, store.ListRequest{PageToken: tok})
				e.wantErr(err, agentmem.ErrInvalid, fmt.Sprintf("List with page token %q", tok))
			}
		}},
	}
}

// listAll pages through List and returns the IDs, checking that no page
// is larger than pageSize (when it is not 0).
func (e *env) listAll(req store.ListRequest, pageSize int) []string {
	e.t.Helper()
	var ids []string
	for range 1000 {
		resp, err := e.st.List(e.ctx, req)
		if err != nil {
			e.t.Fatalf("List(%+v): %v", req, err)
		}
		if pageSize > 0 && len(resp.Sessions) > pageSize {
			e.t.Fatalf("List returned %d sessions for page size %d", len(resp.Sessions), pageSize)
		}
		if resp.NextPageToken != "" && len(resp.Sessions)+len(resp.Damaged) == 0 {
			e.t.Fatal("List returned an empty page with a next-page token")
		}
		for _, s := range resp.Sessions {
			ids = append(ids, s.ID)
		}
		if resp.NextPageToken == "" {
			return ids
		}
		req.PageToken = resp.NextPageToken
	}
	e.t.Fatal("List never returned a last page")
	return nil
}
