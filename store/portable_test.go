package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

// plain is a driver with the eight methods of store.Driver and nothing
// more, counting the calls that reach it.
type plain struct {
	store.Driver
	calls int
}

func (p *plain) Get(ctx context.Context, tenant, id string) (*store.Session, error) {
	p.calls++
	return p.Driver.Get(ctx, tenant, id)
}

func (p *plain) Read(ctx context.Context, req store.ReadRequest) (*store.ReadResponse, error) {
	p.calls++
	return p.Driver.Read(ctx, req)
}

// A driver without optional interfaces: the portable type says so, its
// optional methods fail with errors.ErrUnsupported, and Head reads
// through Get.
func TestPortableWithoutCapabilities(t *testing.T) {
	ctx := context.Background()
	d := &plain{Driver: memstore.NewDriver(memstore.Options{})}
	st := store.New(d)
	for c := range store.CanReadHead + 1 {
		if st.Supports(c) {
			t.Errorf("Supports(%d) of a plain driver", c)
		}
	}
	if _, ok := st.Feed(); ok {
		t.Error("Feed of a plain driver")
	}
	if _, ok := store.LeaserOf(st); ok {
		t.Error("LeaserOf a plain driver's store")
	}
	if _, err := st.Segments(ctx, "", "s"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Segments: %v", err)
	}
	if err := st.Ping(ctx); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Ping: %v", err)
	}
	if _, err := st.ReadFeed(ctx, store.FeedRequest{}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("ReadFeed: %v", err)
	}
	if _, err := st.AcquireLease(ctx, store.LeaseRequest{Consumer: "c", Holder: "h", TTL: store.MinLeaseTTL}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("AcquireLease: %v", err)
	}
	if err := st.ImportEntries(ctx, &store.Session{ID: "s"}, nil); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("ImportEntries: %v", err)
	}
	sess, err := st.Create(ctx, store.CreateRequest{ID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	d.calls = 0
	h, err := st.Head(ctx, "", "s")
	if err != nil || !h.CreatedAt.Equal(sess.CreatedAt) || h.LastSeq != 0 || d.calls != 1 {
		t.Errorf("Head = %+v, %v after %d driver calls; want the session's, through Get", h, err, d.calls)
	}
}

// The portable type checks requests before its driver sees them.
func TestPortableValidatesFirst(t *testing.T) {
	ctx := context.Background()
	d := &plain{Driver: memstore.NewDriver(memstore.Options{})}
	st := store.New(d)
	if _, err := st.Get(ctx, "", ".."); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("Get of a bad ID: %v", err)
	}
	if _, err := st.Read(ctx, store.ReadRequest{SessionID: "s", Limit: -1}); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("Read with a negative limit: %v", err)
	}
	if _, err := st.Head(ctx, "", ""); !errors.Is(err, agentmem.ErrInvalid) {
		t.Errorf("Head without an ID: %v", err)
	}
	if d.calls != 0 {
		t.Errorf("%d bad requests reached the driver", d.calls)
	}
}

// wrapper is a test double over a whole store: it has every method of
// the portable type, but only the capabilities of the store it wraps.
type wrapper struct{ *store.Store }

func TestPortableCapabilitiesAndAs(t *testing.T) {
	mem := memstore.New(memstore.Options{})
	if store.New(mem) != mem {
		t.Error("New of a Store is not that Store")
	}
	for c := range store.CanReadHead + 1 {
		if !mem.Supports(c) {
			t.Errorf("the memstore does not support %d", c)
		}
	}
	if l, ok := store.LeaserOf(mem); !ok || l == nil {
		t.Error("LeaserOf the memstore")
	}
	var d *memstore.Store
	if !mem.As(&d) || d == nil {
		t.Error("As of the memstore's driver")
	}
	var p *plain
	if mem.As(&p) || mem.As(nil) || mem.As(d) {
		t.Error("As of what the driver is not")
	}

	// A double over a plain driver's store does not gain what its
	// promoted methods would claim.
	over := store.New(wrapper{store.New(&plain{Driver: memstore.NewDriver(memstore.Options{})})})
	if over.Supports(store.CanFeed) || over.Supports(store.CanLease) {
		t.Error("a wrapper of a plain store claims a feed")
	}
	if !store.New(wrapper{mem}).Supports(store.CanFeed) {
		t.Error("a wrapper of the memstore has no feed")
	}
}
