package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

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

// failing is a driver with every optional interface whose methods all
// return err, recording each call that reaches it.
type failing struct {
	err   error
	calls []string
}

func (f *failing) fail(op string) error { f.calls = append(f.calls, op); return f.err }

func (f *failing) Create(context.Context, store.CreateRequest) (*store.Session, error) {
	return nil, f.fail("Create")
}
func (f *failing) Get(context.Context, string, string) (*store.Session, error) {
	return nil, f.fail("Get")
}
func (f *failing) List(context.Context, store.ListRequest) (*store.ListResponse, error) {
	return nil, f.fail("List")
}
func (f *failing) Delete(context.Context, string, string) error { return f.fail("Delete") }
func (f *failing) Append(context.Context, store.AppendRequest) (*store.AppendResponse, error) {
	return nil, f.fail("Append")
}
func (f *failing) Read(context.Context, store.ReadRequest) (*store.ReadResponse, error) {
	return nil, f.fail("Read")
}
func (f *failing) Prune(context.Context, store.PruneRequest) (*store.PruneResponse, error) {
	return nil, f.fail("Prune")
}
func (f *failing) Close() error { return f.fail("Close") }
func (f *failing) Head(context.Context, string, string) (store.Head, error) {
	return store.Head{}, f.fail("Head")
}
func (f *failing) Segments(context.Context, string, string) ([]store.Segment, error) {
	return nil, f.fail("Segments")
}
func (f *failing) Ping(context.Context) error { return f.fail("Ping") }
func (f *failing) ImportEntries(context.Context, *store.Session, []store.Entry) error {
	return f.fail("ImportEntries")
}
func (f *failing) ReadFeed(context.Context, store.FeedRequest) (*store.FeedResponse, error) {
	return nil, f.fail("ReadFeed")
}
func (f *failing) FeedHead(context.Context) (int64, error) { return 0, f.fail("FeedHead") }
func (f *failing) LoadCursor(context.Context, string) (store.FeedCursor, error) {
	return store.FeedCursor{}, f.fail("LoadCursor")
}
func (f *failing) SaveCursor(context.Context, string, store.FeedCursor) error {
	return f.fail("SaveCursor")
}
func (f *failing) DropCursor(context.Context, string) error { return f.fail("DropCursor") }
func (f *failing) AcquireLease(context.Context, store.LeaseRequest) (store.Lease, error) {
	return store.Lease{}, f.fail("AcquireLease")
}
func (f *failing) RenewLease(context.Context, store.LeaseRequest) (store.Lease, error) {
	return store.Lease{}, f.fail("RenewLease")
}
func (f *failing) ReleaseLease(context.Context, string, string) error { return f.fail("ReleaseLease") }
func (f *failing) SaveLeasedCursor(context.Context, string, string, store.FeedCursor) error {
	return f.fail("SaveLeasedCursor")
}

// classifying is a failing driver with an ErrorClassifier, which gives
// every error class and records what it was asked.
type classifying struct {
	*failing
	class error
	asked []error
}

func (c *classifying) ClassifyError(err error) error {
	c.asked = append(c.asked, err)
	return c.class
}

// headless has the eight methods of a Driver and the classifier of d, so
// the Store's Head goes through Get.
type headless struct {
	store.Driver
	store.ErrorClassifier
}

// driverError is a driver's own error, which no class matches.
type driverError struct{ msg string }

func (e *driverError) Error() string { return e.msg }

// portableCall is a call of the portable Store that reaches its driver's
// method of that name.
type portableCall struct {
	name string
	call func(ctx context.Context, st *store.Store) error
}

// portableCalls are the Store's methods that call the driver, each with
// a request that passes the Store's checks.
func portableCalls() []portableCall {
	now := time.Now()
	cur := store.FeedCursor{}
	lease := store.LeaseRequest{Consumer: "c", Holder: "h", TTL: store.MinLeaseTTL}
	return []portableCall{
		{"Create", func(ctx context.Context, st *store.Store) error {
			_, err := st.Create(ctx, store.CreateRequest{ID: "s"})
			return err
		}},
		{"Get", func(ctx context.Context, st *store.Store) error { _, err := st.Get(ctx, "", "s"); return err }},
		{"List", func(ctx context.Context, st *store.Store) error {
			_, err := st.List(ctx, store.ListRequest{})
			return err
		}},
		{"Delete", func(ctx context.Context, st *store.Store) error { return st.Delete(ctx, "", "s") }},
		{"Append", func(ctx context.Context, st *store.Store) error {
			_, err := st.Append(ctx, store.AppendRequest{SessionID: "s"})
			return err
		}},
		{"Read", func(ctx context.Context, st *store.Store) error {
			_, err := st.Read(ctx, store.ReadRequest{SessionID: "s"})
			return err
		}},
		{"Prune", func(ctx context.Context, st *store.Store) error {
			_, err := st.Prune(ctx, store.PruneRequest{})
			return err
		}},
		{"Head", func(ctx context.Context, st *store.Store) error { _, err := st.Head(ctx, "", "s"); return err }},
		{"Segments", func(ctx context.Context, st *store.Store) error { _, err := st.Segments(ctx, "", "s"); return err }},
		{"Ping", func(ctx context.Context, st *store.Store) error { return st.Ping(ctx) }},
		{"ImportEntries", func(ctx context.Context, st *store.Store) error {
			return st.ImportEntries(ctx, &store.Session{ID: "s", Retention: store.SessionRetention, CreatedAt: now, UpdatedAt: now}, nil)
		}},
		{"ReadFeed", func(ctx context.Context, st *store.Store) error {
			_, err := st.ReadFeed(ctx, store.FeedRequest{})
			return err
		}},
		{"FeedHead", func(ctx context.Context, st *store.Store) error { _, err := st.FeedHead(ctx); return err }},
		{"LoadCursor", func(ctx context.Context, st *store.Store) error { _, err := st.LoadCursor(ctx, "c"); return err }},
		{"SaveCursor", func(ctx context.Context, st *store.Store) error { return st.SaveCursor(ctx, "c", cur) }},
		{"DropCursor", func(ctx context.Context, st *store.Store) error { return st.DropCursor(ctx, "c") }},
		{"AcquireLease", func(ctx context.Context, st *store.Store) error { _, err := st.AcquireLease(ctx, lease); return err }},
		{"RenewLease", func(ctx context.Context, st *store.Store) error { _, err := st.RenewLease(ctx, lease); return err }},
		{"ReleaseLease", func(ctx context.Context, st *store.Store) error { return st.ReleaseLease(ctx, "c", "h") }},
		{"SaveLeasedCursor", func(ctx context.Context, st *store.Store) error {
			return st.SaveLeasedCursor(ctx, "c", "h", cur)
		}},
		{"Close", func(_ context.Context, st *store.Store) error { return st.Close() }},
	}
}

// Every error a driver's method returns gets the class its classifier
// gives it, with the driver's error and message kept; a success stays
// nil and asks nothing.
func TestPortableClassifiesEveryMethod(t *testing.T) {
	ctx := context.Background()
	for _, pc := range portableCalls() {
		t.Run(pc.name, func(t *testing.T) {
			orig := &driverError{msg: "disk on fire"}
			d := &classifying{failing: &failing{err: orig}, class: agentmem.ErrUnavailable}
			err := pc.call(ctx, store.New(d))
			if len(d.calls) != 1 || d.calls[0] != pc.name {
				t.Fatalf("the driver got %v, want one call of %s", d.calls, pc.name)
			}
			if len(d.asked) != 1 || d.asked[0] != orig {
				t.Errorf("the classifier was asked about %v, want the driver's error once", d.asked)
			}
			var got *driverError
			if !errors.Is(err, agentmem.ErrUnavailable) || !errors.As(err, &got) || got != orig {
				t.Errorf("%s: %v; want the driver's error, classified ErrUnavailable", pc.name, err)
			}
			if err != nil && err.Error() != orig.msg {
				t.Errorf("message %q, want the driver's %q", err, orig.msg)
			}

			d.failing.err, d.failing.calls, d.asked = nil, nil, nil
			if err := pc.call(ctx, store.New(d)); err != nil || len(d.asked) != 0 {
				t.Errorf("a success: %v, with %d errors classified", err, len(d.asked))
			}
		})
	}
}

// Head without a HeadReader goes through Get, and its error through the
// classifier too.
func TestPortableClassifiesHeadThroughGet(t *testing.T) {
	orig := &driverError{msg: "lost"}
	d := &classifying{failing: &failing{err: orig}, class: agentmem.ErrUnavailable}
	st := store.New(headless{d, d})
	if st.Supports(store.CanReadHead) {
		t.Fatal("headless reads heads")
	}
	_, err := st.Head(context.Background(), "", "s")
	var got *driverError
	if len(d.calls) != 1 || d.calls[0] != "Get" || !errors.Is(err, agentmem.ErrUnavailable) || !errors.As(err, &got) || got != orig {
		t.Errorf("Head: %v after calls %v; want Get's error, classified", err, d.calls)
	}
}

// An error that has a class already is returned as the driver returned
// it, without asking the classifier: no driver can turn a missing session
// into an outage, or the other way round.
func TestPortableKeepsClassifiedErrors(t *testing.T) {
	ctx := context.Background()
	for _, want := range []error{
		fmt.Errorf("session %q: %w", "s", agentmem.ErrNotFound),
		&agentmem.InvalidError{Field: "id", Reason: "bad"},
		&store.ExistsError{ID: "s"},
		store.ErrIDReused,
		fmt.Errorf("sqlite: get: %w: busy", agentmem.ErrUnavailable),
		fmt.Errorf("sqlite: append: %w: full", agentmem.ErrExhausted),
		store.ErrClosed,
		fmt.Errorf("no: %w", errors.ErrUnsupported),
		fmt.Errorf("read: %w", context.Canceled),
		&agentmem.DamagedError{Kind: "session", ID: "s", Err: errors.New("bad json")},
	} {
		d := &classifying{failing: &failing{err: want}, class: agentmem.ErrNotFound}
		_, err := store.New(d).Get(ctx, "", "s")
		if err != want || len(d.asked) != 0 {
			t.Errorf("driver error %v: got %v (classifier asked %d times); want it unchanged", want, err, len(d.asked))
		}
	}
}

// A deadline that passed is ErrUnavailable on every driver (retry with
// more time), the deadline still matching.
func TestPortableDeadlineIsUnavailable(t *testing.T) {
	orig := fmt.Errorf("read: %w", context.DeadlineExceeded)
	for name, d := range map[string]store.Driver{
		"without a classifier": &failing{err: orig},
		"with one":             &classifying{failing: &failing{err: orig}, class: agentmem.ErrNotFound},
	} {
		_, err := store.New(d).Get(context.Background(), "", "s")
		if !errors.Is(err, agentmem.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, agentmem.ErrNotFound) {
			t.Errorf("%s: %v; want the deadline, ErrUnavailable", name, err)
		}
	}
}

// An error nobody classifies is returned as it is: a failure nobody
// expected, never a class it is not.
func TestPortableLeavesUnknownErrors(t *testing.T) {
	orig := &driverError{msg: "corrupt row"}
	for name, d := range map[string]store.Driver{
		"without a classifier":        &failing{err: orig},
		"with one that does not know": &classifying{failing: &failing{err: orig}},
	} {
		_, err := store.New(d).Get(context.Background(), "", "s")
		if err != orig {
			t.Errorf("%s: %v (%T); want the driver's error as it is", name, err, err)
		}
	}
}

// A class that carries details (the field of an *agentmem.InvalidError)
// is found by errors.As, after the driver's own error.
func TestPortableClassWithDetails(t *testing.T) {
	orig := &driverError{msg: "400 bad request"}
	d := &classifying{failing: &failing{err: orig}, class: &agentmem.InvalidError{Field: "id", Reason: "too long"}}
	_, err := store.New(d).Get(context.Background(), "", "s")
	var inv *agentmem.InvalidError
	var got *driverError
	if !errors.Is(err, agentmem.ErrInvalid) || !errors.As(err, &inv) || inv.Field != "id" || !errors.As(err, &got) || got != orig {
		t.Errorf("Get: %v; want the driver's error with the class's field", err)
	}
}
