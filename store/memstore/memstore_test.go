package memstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Config{
		New: func(t *testing.T, clock func() time.Time) store.Driver {
			return memstore.NewDriver(memstore.Options{Clock: clock})
		},
	})
}

// TestConformanceReopen runs the suite through handles that can be closed
// and reopened over the same in-memory data, as a process restart would
// reopen a file, so the suite's Reopen checks run here too.
func TestConformanceReopen(t *testing.T) {
	storetest.Run(t, storetest.Config{
		New: func(t *testing.T, clock func() time.Time) store.Driver {
			return &handle{st: memstore.NewDriver(memstore.Options{Clock: clock})}
		},
		Reopen: func(t *testing.T, st *store.Store) store.Driver {
			var h *handle
			if !st.As(&h) {
				t.Fatalf("%v is not a handle", st)
			}
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			return &handle{st: h.st}
		},
	})
}

func TestOpenURL(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if d := (*memstore.Store)(nil); !st.As(&d) {
		t.Fatalf("mem:// opened a %v", st)
	}
	other, err := store.Open(ctx, "MEM://")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, store.CreateRequest{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Get(ctx, "", "x"); err == nil {
		t.Fatal("two mem:// stores share data")
	}
	if _, err := store.Open(ctx, "mem://?x=1"); err == nil {
		t.Fatal("mem:// accepted options")
	}
}

// handle is a closable view of a memstore.Store: closing it leaves the
// store's data for the next handle.
type handle struct {
	st     *memstore.Store
	mu     sync.Mutex
	closed bool
}

var (
	_ store.Driver   = (*handle)(nil)
	_ store.Importer = (*handle)(nil)
	_ store.Feed     = (*handle)(nil)
	_ store.Leaser   = (*handle)(nil)
)

func (h *handle) check() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return store.ErrClosed
	}
	return nil
}

func (h *handle) Create(ctx context.Context, req store.CreateRequest) (*store.Session, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	return h.st.Create(ctx, req)
}

func (h *handle) Get(ctx context.Context, tenant, id string) (*store.Session, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	return h.st.Get(ctx, tenant, id)
}

func (h *handle) List(ctx context.Context, req store.ListRequest) (*store.ListResponse, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	return h.st.List(ctx, req)
}

func (h *handle) Delete(ctx context.Context, tenant, id string) error {
	if err := h.check(); err != nil {
		return err
	}
	return h.st.Delete(ctx, tenant, id)
}

func (h *handle) Append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	return h.st.Append(ctx, req)
}

func (h *handle) Read(ctx context.Context, req store.ReadRequest) (*store.ReadResponse, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	return h.st.Read(ctx, req)
}

func (h *handle) Prune(ctx context.Context, req store.PruneRequest) (*store.PruneResponse, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	return h.st.Prune(ctx, req)
}

func (h *handle) ImportEntries(ctx context.Context, s *store.Session, entries []store.Entry) error {
	if err := h.check(); err != nil {
		return err
	}
	return h.st.ImportEntries(ctx, s, entries)
}

func (h *handle) ReadFeed(ctx context.Context, req store.FeedRequest) (*store.FeedResponse, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	return h.st.ReadFeed(ctx, req)
}

func (h *handle) FeedHead(ctx context.Context) (int64, error) {
	if err := h.check(); err != nil {
		return 0, err
	}
	return h.st.FeedHead(ctx)
}

func (h *handle) LoadCursor(ctx context.Context, consumer string) (store.FeedCursor, error) {
	if err := h.check(); err != nil {
		return store.FeedCursor{}, err
	}
	return h.st.LoadCursor(ctx, consumer)
}

func (h *handle) SaveCursor(ctx context.Context, consumer string, c store.FeedCursor) error {
	if err := h.check(); err != nil {
		return err
	}
	return h.st.SaveCursor(ctx, consumer, c)
}

func (h *handle) DropCursor(ctx context.Context, consumer string) error {
	if err := h.check(); err != nil {
		return err
	}
	return h.st.DropCursor(ctx, consumer)
}

func (h *handle) AcquireLease(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	if err := h.check(); err != nil {
		return store.Lease{}, err
	}
	return h.st.AcquireLease(ctx, req)
}

func (h *handle) RenewLease(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	if err := h.check(); err != nil {
		return store.Lease{}, err
	}
	return h.st.RenewLease(ctx, req)
}

func (h *handle) ReleaseLease(ctx context.Context, consumer, holder string) error {
	if err := h.check(); err != nil {
		return err
	}
	return h.st.ReleaseLease(ctx, consumer, holder)
}

func (h *handle) SaveLeasedCursor(ctx context.Context, consumer, holder string, c store.FeedCursor) error {
	if err := h.check(); err != nil {
		return err
	}
	return h.st.SaveLeasedCursor(ctx, consumer, holder, c)
}

func (h *handle) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	return nil
}
