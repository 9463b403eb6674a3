package recallview_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/views/recallview"
)

// noFeed hides a store's change feed and its segments: a store that
// tells nothing but what store.Store does.
type noFeed struct{ st *store.Store }

func (n noFeed) Create(ctx context.Context, req store.CreateRequest) (*store.Session, error) {
	return n.st.Create(ctx, req)
}
func (n noFeed) Get(ctx context.Context, tenant, id string) (*store.Session, error) {
	return n.st.Get(ctx, tenant, id)
}
func (n noFeed) List(ctx context.Context, req store.ListRequest) (*store.ListResponse, error) {
	return n.st.List(ctx, req)
}
func (n noFeed) Delete(ctx context.Context, tenant, id string) error {
	return n.st.Delete(ctx, tenant, id)
}
func (n noFeed) Append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	return n.st.Append(ctx, req)
}
func (n noFeed) Read(ctx context.Context, req store.ReadRequest) (*store.ReadResponse, error) {
	return n.st.Read(ctx, req)
}
func (n noFeed) Prune(ctx context.Context, req store.PruneRequest) (*store.PruneResponse, error) {
	return n.st.Prune(ctx, req)
}
func (n noFeed) Close() error { return n.st.Close() }
func (n noFeed) ImportEntries(ctx context.Context, s *store.Session, entries []store.Entry) error {
	return n.st.ImportEntries(ctx, s, entries)
}

// TestView: a follower started with Start indexes what is written to
// the store it follows (appends, branches, imports) and forgets what is
// deleted or pruned; an index that fails is reported, and the writes are
// stored all the same.
func TestView(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New(memstore.Options{Clock: func() time.Time { return t0 }})
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	var (
		errMu     sync.Mutex
		indexErrs []error
		reported  = make(chan struct{}, 100)
	)
	fw, stop := recallview.Start(mem, mem, &recallview.Indexer{Index: ix, Store: mem}, recallview.FollowerOptions{
		OnError: func(err error) {
			errMu.Lock()
			indexErrs = append(indexErrs, err)
			errMu.Unlock()
			select {
			case reported <- struct{}{}:
			default:
			}
		},
	})
	defer stop()
	is := mem

	if _, err := is.Create(ctx, store.CreateRequest{ID: "s1", Tenant: "acme", UserID: "alice"}); err != nil {
		t.Fatal(err)
	}
	msg := func(id, text string) agentmem.Step {
		return &agentmem.MessageStep{StepInfo: agentmem.StepInfo{ID: id}, Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(text)}}
	}
	if _, err := is.Append(ctx, store.AppendRequest{Tenant: "acme", SessionID: "s1", Steps: []agentmem.Step{msg("a", "my cat is called Miso"), msg("b", "I live in Porto")}}); err != nil {
		t.Fatal(err)
	}
	search := func(tenant, q string, f recall.Filter) []recall.Hit {
		t.Helper()
		if err := fw.Sync(ctx); err != nil { // read-your-writes
			t.Fatal(err)
		}
		hits, err := ix.Search(ctx, recall.Query{Tenant: tenant, Text: q, K: 5, Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}
	hits := search("acme", "cat name", recall.Scope("", "alice", ""))
	if len(hits) == 0 || hits[0].Doc.ID != "s1#1" || hits[0].Doc.Metadata[recall.MetaSession] != "s1" {
		t.Fatalf("search after append: %+v", hits)
	}
	if len(search("", "cat", recall.Filter{})) != 0 {
		t.Error("another tenant sees the session's turns")
	}

	// A branch is indexed with the history it inherits.
	if _, err := is.Create(ctx, store.CreateRequest{ID: "s2", Tenant: "acme", UserID: "alice", ParentID: "s1", ForkSeq: 1}); err != nil {
		t.Fatal(err)
	}
	hits = search("acme", "cat", recall.Scope("s2", "", ""))
	if len(hits) != 1 || hits[0].Doc.ID != "s2#1" {
		t.Fatalf("branch search: %+v", hits)
	}

	// Deleting a session forgets its turns, not the branch's.
	if err := is.Delete(ctx, "acme", "s1"); err != nil {
		t.Fatal(err)
	}
	if hits := search("acme", "cat", recall.Scope("s1", "", "")); len(hits) != 0 {
		t.Errorf("deleted session still found: %+v", hits)
	}
	if hits := search("acme", "cat", recall.Scope("s2", "", "")); len(hits) != 1 {
		t.Errorf("branch lost its turns: %+v", hits)
	}
	// An imported session is indexed with its whole log.
	src, err := is.Read(ctx, store.ReadRequest{Tenant: "acme", SessionID: "s2"})
	if err != nil {
		t.Fatal(err)
	}
	imported := *src.Session
	imported.ID, imported.ParentID, imported.ForkSeq = "s3", "", 0
	if err := is.ImportEntries(ctx, &imported, src.Entries); err != nil {
		t.Fatal(err)
	}
	if hits := search("acme", "cat", recall.Scope("s3", "", "")); len(hits) != 1 || hits[0].Doc.ID != "s3#1" {
		t.Errorf("imported session: %+v", hits)
	}
	// Prune forgets the turns of the sessions that expired, and only
	// theirs.
	if _, err := is.Create(ctx, store.CreateRequest{ID: "s4", Tenant: "acme", UserID: "alice", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := is.Append(ctx, store.AppendRequest{Tenant: "acme", SessionID: "s4", Steps: []agentmem.Step{msg("d", "my other cat is Tofu")}}); err != nil {
		t.Fatal(err)
	}
	if hits := search("acme", "cat", recall.Scope("s4", "", "")); len(hits) != 1 {
		t.Fatalf("s4 before it expires: %+v", hits)
	}
	pruned, err := is.Prune(ctx, store.PruneRequest{Now: t0.Add(2 * time.Hour)})
	if err != nil || pruned.SessionsDeleted != 1 {
		t.Fatalf("Prune: %+v %v", pruned, err)
	}
	if hits := search("acme", "cat", recall.Scope("s4", "", "")); len(hits) != 0 {
		t.Errorf("an expired session's turns are still found: %+v", hits)
	}
	if hits := search("acme", "cat", recall.Scope("s3", "", "")); len(hits) != 1 {
		t.Errorf("Prune forgot a live session's turns: %+v", hits)
	}
	errMu.Lock()
	if len(indexErrs) != 0 {
		t.Fatalf("index errors: %v", indexErrs)
	}
	errMu.Unlock()

	// An index that fails does not fail the acknowledged write.
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := is.Append(ctx, store.AppendRequest{Tenant: "acme", SessionID: "s2", Steps: []agentmem.Step{msg("c", "hello")}}); err != nil {
		t.Fatalf("append with a closed index: %v", err)
	}
	fw.Notify()
	<-reported // the failure is reported (by the follower, as it retries)
	errMu.Lock()
	if len(indexErrs) < 1 || !errors.Is(indexErrs[0], recall.ErrClosed) {
		t.Errorf("index errors: %v", indexErrs)
	}
	errMu.Unlock()
	resp, err := is.Read(ctx, store.ReadRequest{Tenant: "acme", SessionID: "s2"})
	if err != nil || resp.Session.LastSeq != 2 {
		t.Fatalf("read: %v %+v", err, resp)
	}
}

// TestViewAmendments: an action whose tool call is answered by a later
// append (an amendment) is indexed with its result; a full compaction's
// copy (a truncation) does not replace the full text.
func TestViewAmendments(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New(memstore.Options{Clock: func() time.Time { return t0 }})
	var st *store.Store = mem
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	f, stop := recallview.Start(mem, mem, &recallview.Indexer{Index: ix, Store: mem}, recallview.FollowerOptions{
		OnError: func(err error) { t.Errorf("indexing: %v", err) },
	})
	defer stop()
	is := mem
	search := func(q string) []recall.Hit {
		t.Helper()
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		hits, err := ix.Search(ctx, recall.Query{Text: q, K: 5})
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}
	if _, err := is.Create(ctx, store.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	add := func(msgs ...agentmem.Message) {
		t.Helper()
		if _, err := newStoreService(t, is).AppendMessages(ctx, sessions.MessagesRequest{SessionID: "s", Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	add(agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text("where is the config?")})
	add(agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text("searching"),
		ToolCalls: []agentmem.ToolCall{{ID: "g1", Name: "grep", Arguments: `{"q":"config"}`}}})
	// withResult is the first hit if it is the action, with its
	// result.
	withResult := func(hits []recall.Hit) bool {
		return len(hits) > 0 && hits[0].Doc.ID == "s#2" && strings.Contains(hits[0].Doc.Text, "grep") && strings.Contains(hits[0].Doc.Text, "xylophone.yaml")
	}
	for _, h := range search("xylophone") {
		if strings.Contains(h.Doc.Text, "xylophone") {
			t.Fatalf("found before the result: %+v", h)
		}
	}
	add(agentmem.Message{Role: agentmem.RoleTool, ToolCallID: "g1", Content: agentmem.Text("found in xylophone.yaml")})
	if hits := search("xylophone"); !withResult(hits) {
		t.Fatalf("the completed action: %+v", hits)
	}
	// A full record whose copy truncates the action is not indexed.
	ws, err := is.Read(ctx, store.ReadRequest{SessionID: "s", WorkingSet: true})
	if err != nil {
		t.Fatal(err)
	}
	short := store.WithNumber(ws.Steps[1].(*agentmem.ActionStep).Truncate(3), 2)
	if _, err := is.Append(ctx, store.AppendRequest{SessionID: "s", Compaction: &store.CompactionRecord{Working: []int64{1, 2}, Replaced: []agentmem.Step{short}}}); err != nil {
		t.Fatal(err)
	}
	if hits := search("xylophone"); !withResult(hits) {
		t.Fatalf("after a truncating compaction: %+v", hits)
	}
	// A backfill gives the same document.
	if _, err := (&recallview.Indexer{Index: ix, Store: st}).Backfill(ctx, store.ListRequest{}); err != nil {
		t.Fatal(err)
	}
	if hits := search("xylophone"); !withResult(hits) {
		t.Fatalf("after a backfill: %+v", hits)
	}
}

// newStoreService returns a sessions service over st, without a cache.
func newStoreService(t testing.TB, st *store.Store) *sessions.Service {
	t.Helper()
	svc, err := sessions.New(sessions.Config{Store: st, CacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}
