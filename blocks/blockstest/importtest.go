package blockstest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
)

// importer returns st as a blocks.Importer and a blocks.Lister, or skips
// the test: an import needs both.
func importer(t *testing.T, st blocks.Store) (blocks.Importer, blocks.Lister) {
	t.Helper()
	imp, ok := st.(blocks.Importer)
	lst, ok2 := st.(blocks.Lister)
	if !ok || !ok2 {
		t.Skipf("%T does not implement blocks.Importer and blocks.Lister", st)
	}
	return imp, lst
}

// importRoundTrip: a block imported into another store, with a history
// cut to its newest MaxHistory changes, reads back the same, version,
// times and history; the next edit of it continues from its version and
// keeps its history bounded.
func (s *suite) importRoundTrip(t *testing.T) {
	src, m, c := s.open(t)
	k := key("log")
	must(t)(m.Set(ctx, blocks.SetRequest{Key: k, Value: "0", Limit: 500, Description: ptr("the log"), ReadOnly: ptr(true), Edit: blocks.Edit{By: "op"}}))
	n := blocks.MaxHistory + 3
	for i := 1; i < n; i++ {
		c.Advance(time.Second)
		must(t)(m.Set(ctx, blocks.SetRequest{Key: k, Value: fmt.Sprint(i), Edit: blocks.Edit{By: fmt.Sprint("agent-", i%3)}}))
	}
	sess := blocks.Key{Tenant: "", Owner: blocks.Session("s1"), Label: "task"}
	must(t)(m.Set(ctx, blocks.SetRequest{Key: sess, Value: "ship it — café"}))
	must(t)(m.Append(ctx, sess, "today", blocks.Edit{By: "agent"}))

	dst, dm, dc := s.open(t)
	imp, lst := importer(t, dst)
	for _, k := range []blocks.Key{k, sess} {
		b, err := src.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		h, err := src.History(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if err := imp.ImportBlock(ctx, b, h); err != nil {
			t.Fatalf("ImportBlock(%s): %v", k.Label, err)
		}
		same(t, dst, b)
		got, err := dst.History(ctx, k)
		if err != nil || !reflect.DeepEqual(got, h) {
			t.Fatalf("history of %s after import:\n%+v, %v\nwant\n%+v", k.Label, got, err, h)
		}
	}
	// The next edit continues from the imported version.
	dc.Advance(time.Hour)
	b := must(t)(dm.Set(ctx, blocks.SetRequest{Key: k, Value: "next"}))
	h, err := dst.History(ctx, k)
	if err != nil || b.Version != int64(n+1) || len(h) != blocks.MaxHistory || h[len(h)-1].Version != int64(n+1) || h[0].Version != int64(n+2-blocks.MaxHistory) {
		t.Fatalf("an edit after import: version %d, history of %d (%v); want version %d, the newest %d changes", b.Version, len(h), err, n+1, blocks.MaxHistory)
	}
	if tenants, err := lst.Tenants(ctx); err != nil || !slices.Equal(tenants, []string{"", "acme"}) {
		t.Fatalf("Tenants = %q, %v", tenants, err)
	}
}

// importConflict: an import of a block whose key is taken is a conflict
// and changes nothing; an import of a block or history that is not
// valid writes nothing.
func (s *suite) importConflict(t *testing.T) {
	st, m, _ := s.open(t)
	imp, lst := importer(t, st)
	k := key("human")
	at := t0.Truncate(time.Microsecond).Add(-time.Hour)
	b := blocks.Block{Key: k, Value: "Alice, 41.", Limit: 100, Version: 3, CreatedAt: at, UpdatedAt: at.Add(time.Minute), UpdatedBy: "op"}
	h := []blocks.Change{
		{Version: 2, Action: blocks.ActionAppended, By: "agent", At: at.Add(time.Second), Before: "Alice.", After: "Alice, 40."},
		{Version: 3, Action: blocks.ActionReplaced, By: "op", At: at.Add(time.Minute), Before: "Alice, 40.", After: "Alice, 41."},
	}
	if err := imp.ImportBlock(ctx, b, h); err != nil {
		t.Fatal(err)
	}
	other := b
	other.Value, other.Version = "Bob.", 1
	if err := imp.ImportBlock(ctx, other, nil); !errors.Is(err, agentmem.ErrConflict) {
		t.Fatalf("ImportBlock of a taken key = %v, want ErrConflict", err)
	}
	same(t, st, b)
	must(t)(m.Set(ctx, blocks.SetRequest{Key: key("persona"), Value: "x"}))

	bad := b
	bad.Key = key("other")
	for name, tc := range map[string]struct {
		b blocks.Block
		h []blocks.Change
	}{
		"a gap in the versions":           {bad, []blocks.Change{h[0], {Version: 4, Action: blocks.ActionSet, At: at, After: b.Value}}},
		"a history past the block":        {bad, append(slices.Clone(h), blocks.Change{Version: 4, Action: blocks.ActionSet, At: at, Before: b.Value, After: b.Value})},
		"the newest change not the value": {bad, []blocks.Change{h[0], {Version: 3, Action: blocks.ActionSet, At: at, After: "other"}}},
		"more changes than versions":      {blocks.Block{Key: bad.Key, Value: "Alice, 41.", Limit: 100, Version: 1, CreatedAt: at, UpdatedAt: at}, h},
		"an unknown action":               {bad, []blocks.Change{{Version: 3, Action: "dreamt", At: at, After: b.Value}}},
		"a change without a time":         {bad, []blocks.Change{{Version: 3, Action: blocks.ActionSet, After: b.Value}}},
		"a value with NUL":                {bad, []blocks.Change{{Version: 3, Action: blocks.ActionSet, At: at, Before: "a\x00", After: b.Value}}},
		"a block over its limit":          {blocks.Block{Key: bad.Key, Value: "too long", Limit: 3, Version: 1, CreatedAt: at, UpdatedAt: at}, nil},
		"a block without a version":       {blocks.Block{Key: bad.Key, Value: "v", Limit: 3, CreatedAt: at, UpdatedAt: at}, nil},
		"more than MaxHistory changes":    {blocks.Block{Key: bad.Key, Value: "v", Limit: 3, Version: blocks.MaxHistory + 1, CreatedAt: at, UpdatedAt: at}, make([]blocks.Change, blocks.MaxHistory+1)},
		"a key that is not valid":         {blocks.Block{Key: blocks.Key{Owner: blocks.User("u"), Label: "1x"}, Value: "v", Limit: 3, Version: 1, CreatedAt: at, UpdatedAt: at}, nil},
		"an owner of an unknown kind":     {blocks.Block{Key: blocks.Key{Owner: blocks.Owner{Kind: "team", ID: "t"}, Label: "x"}, Value: "v", Limit: 3, Version: 1, CreatedAt: at, UpdatedAt: at}, nil},
	} {
		if err := imp.ImportBlock(ctx, tc.b, tc.h); !errors.Is(err, agentmem.ErrInvalid) {
			t.Errorf("ImportBlock with %s = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := st.Get(ctx, bad.Key); !errors.Is(err, agentmem.ErrNotFound) {
		t.Fatalf("a refused import wrote a block: %v", err)
	}
	if owners, err := lst.Owners(ctx, "acme"); err != nil || !reflect.DeepEqual(owners, []blocks.Owner{blocks.User("alice")}) {
		t.Fatalf("Owners after refused imports = %+v, %v", owners, err)
	}
}

// lister: Tenants and Owners name every tenant and owner with blocks,
// sorted bytewise (owners by kind, then ID), each once.
func (s *suite) lister(t *testing.T) {
	st, m, _ := s.open(t)
	_, lst := importer(t, st)
	if tenants, err := lst.Tenants(ctx); err != nil || len(tenants) != 0 {
		t.Fatalf("Tenants of an empty store = %v, %v", tenants, err)
	}
	for _, k := range []blocks.Key{
		{Tenant: "b", Owner: blocks.User("zed"), Label: "x"},
		{Tenant: "b", Owner: blocks.User("zed"), Label: "y"},
		{Tenant: "b", Owner: blocks.User("Zed"), Label: "x"},
		{Tenant: "b", Owner: blocks.Session("s9"), Label: "x"},
		{Tenant: "b", Owner: blocks.User("amy"), Label: "x"},
		{Tenant: "a", Owner: blocks.User("x"), Label: "x"},
		{Tenant: "", Owner: blocks.Session("émile"), Label: "x"},
	} {
		must(t)(m.Set(ctx, blocks.SetRequest{Key: k, Value: "v"}))
	}
	if tenants, err := lst.Tenants(ctx); err != nil || !slices.Equal(tenants, []string{"", "a", "b"}) {
		t.Fatalf("Tenants = %q, %v", tenants, err)
	}
	want := []blocks.Owner{blocks.Session("s9"), blocks.User("Zed"), blocks.User("amy"), blocks.User("zed")}
	if owners, err := lst.Owners(ctx, "b"); err != nil || !reflect.DeepEqual(owners, want) {
		t.Fatalf("Owners(b) = %+v, %v; want %+v", owners, err, want)
	}
	if owners, err := lst.Owners(ctx, "nobody"); err != nil || len(owners) != 0 {
		t.Fatalf("Owners of a tenant without blocks = %+v, %v", owners, err)
	}
}
