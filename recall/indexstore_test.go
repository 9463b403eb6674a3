package recall_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/store/storetest"
)

// An IndexedStore is still a store: the whole conformance suite passes
// through it.
func TestIndexedStoreConformance(t *testing.T) {
	storetest.Run(t, storetest.Config{
		New: func(t *testing.T, clock func() time.Time) store.Store {
			st := memstore.New(memstore.Options{Clock: clock})
			ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
			var mu sync.Mutex
			is := recall.NewIndexedStore(st, &recall.Indexer{Index: ix, Store: st})
			is.OnError = func(_ context.Context, id string, err error) {
				mu.Lock()
				defer mu.Unlock()
				t.Errorf("indexing %s: %v", id, err)
			}
			return is
		},
	})
}

func TestIndexedStore(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{Clock: func() time.Time { return t0 }})
	ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
	is := recall.NewIndexedStore(st, &recall.Indexer{Index: ix, Store: st})
	var indexErrs []error
	is.OnError = func(_ context.Context, _ string, err error) { indexErrs = append(indexErrs, err) }

	if _, err := is.Create(ctx, store.CreateRequest{ID: "s1", Tenant: "acme", UserID: "alice"}); err != nil {
		t.Fatal(err)
	}
	msg := func(id, text string) agentmem.Step {
		return &agentmem.MessageStep{StepInfo: agentmem.StepInfo{ID: id}, Message: agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(text)}}
	}
	if _, err := is.Append(ctx, store.AppendRequest{SessionID: "s1", Steps: []agentmem.Step{msg("a", "my cat is called Miso"), msg("b", "I live in Porto")}}); err != nil {
		t.Fatal(err)
	}
	search := func(tenant, q string, f recall.Filter) []recall.Hit {
		t.Helper()
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
	if err := is.Delete(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if hits := search("acme", "cat", recall.Scope("s1", "", "")); len(hits) != 0 {
		t.Errorf("deleted session still found: %+v", hits)
	}
	if hits := search("acme", "cat", recall.Scope("s2", "", "")); len(hits) != 1 {
		t.Errorf("branch lost its turns: %+v", hits)
	}
	// An imported session is indexed with its whole log.
	src, err := is.Read(ctx, store.ReadRequest{SessionID: "s2"})
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
	if _, err := is.Append(ctx, store.AppendRequest{SessionID: "s4", Steps: []agentmem.Step{msg("d", "my other cat is Tofu")}}); err != nil {
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
	if len(indexErrs) != 0 {
		t.Fatalf("index errors: %v", indexErrs)
	}

	// An index that fails does not fail the acknowledged write.
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := is.Append(ctx, store.AppendRequest{SessionID: "s2", Steps: []agentmem.Step{msg("c", "hello")}}); err != nil {
		t.Fatalf("append with a closed index: %v", err)
	}
	if len(indexErrs) != 1 || !errors.Is(indexErrs[0], recall.ErrClosed) {
		t.Errorf("index errors: %v", indexErrs)
	}
	resp, err := is.Read(ctx, store.ReadRequest{SessionID: "s2"})
	if err != nil || resp.Session.LastSeq != 2 {
		t.Fatalf("read: %v %+v", err, resp)
	}
}
