package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
)

// Store is the portable session store: the one type programs use,
// whatever the backend. New builds it over a Driver (a backend: package
// memstore, sqlite, postgres or client/remote, each of which returns a
// Store from its constructor). Store checks every request once, before its
// driver sees it, so every backend refuses the same input with the same
// errors. It finds the optional capabilities of its driver itself: the
// change feed, leases, segments, exact import, readiness and head reads.
// Callers ask Supports, or call the method and get an error matching
// errors.ErrUnsupported, instead of asserting on the driver's type. It
// classifies every error of its driver once (see ErrorClassifier), so
// callers test errors with errors.Is whatever the backend.
//
// A Store is safe for concurrent use when its driver is, as every
// backend of this module is. See Driver for the contract the methods
// keep.
type Store struct {
	d    Driver
	caps [numCapabilities]bool

	feed   Feed
	leaser Leaser
	seg    Segmenter
	imp    Importer
	ping   Pinger
	head   HeadReader

	classifier ErrorClassifier
}

// Capability names an optional capability of a Store's driver.
type Capability int

// Capabilities a driver may have (see Store.Supports).
const (
	// CanFeed is the change feed: ReadFeed, FeedHead, LoadCursor,
	// SaveCursor and DropCursor (a Feed driver).
	CanFeed Capability = iota
	// CanLease is the feed consumers' leases: AcquireLease, RenewLease,
	// ReleaseLease and SaveLeasedCursor (a Leaser driver).
	CanLease
	// CanSegment is Segments (a Segmenter driver).
	CanSegment
	// CanImport is ImportEntries, which Import needs (an Importer
	// driver).
	CanImport
	// CanPing is Ping (a Pinger driver).
	CanPing
	// CanReadHead is a Head that reads only the session's head (a
	// HeadReader driver); Head works without it, through Get.
	CanReadHead

	numCapabilities
)

// New returns the portable Store over a driver. The optional interfaces
// the driver implements (Feed, Leaser, Segmenter, Importer, Pinger,
// HeadReader, ErrorClassifier) are found here, once. A driver that wraps a Store (a test
// double that embeds one to change a method) has the capabilities of the
// Store it wraps, which its Supports method reports. New of a Store
// returns it.
func New(d Driver) *Store {
	if s, ok := d.(*Store); ok {
		return s
	}
	s := &Store{d: d}
	s.feed, s.caps[CanFeed] = d.(Feed)
	s.leaser, s.caps[CanLease] = d.(Leaser)
	s.seg, s.caps[CanSegment] = d.(Segmenter)
	s.imp, s.caps[CanImport] = d.(Importer)
	s.ping, s.caps[CanPing] = d.(Pinger)
	s.head, s.caps[CanReadHead] = d.(HeadReader)
	s.classifier, _ = d.(ErrorClassifier)
	if w, ok := d.(interface{ Supports(Capability) bool }); ok {
		for c := range numCapabilities {
			s.caps[c] = s.caps[c] && w.Supports(c)
		}
	}
	// A feed without leases has none to hand out.
	s.caps[CanLease] = s.caps[CanLease] && s.caps[CanFeed]
	return s
}

// Supports reports whether the store's driver has a capability.
func (s *Store) Supports(c Capability) bool {
	return c >= 0 && c < numCapabilities && s.caps[c]
}

// As sets target, a non-nil pointer, to the store's driver if the driver
// is assignable to what target points to, and reports whether it did. It
// reaches what is a backend's own (the methods of *sqlite.Store, say):
//
//	var d *sqlite.Store
//	if st.As(&d) { ... }
//
// A driver with an As method of its own is asked when the driver itself
// does not fit.
func (s *Store) As(target any) bool {
	v := reflect.ValueOf(target)
	if target == nil || v.Kind() != reflect.Pointer || v.IsNil() {
		return false
	}
	if dv := reflect.ValueOf(s.d); dv.Type().AssignableTo(v.Elem().Type()) {
		v.Elem().Set(dv)
		return true
	}
	if a, ok := s.d.(interface{ As(any) bool }); ok {
		return a.As(target)
	}
	return false
}

// unsupported is the error of a method whose capability the driver
// lacks.
func (s *Store) unsupported(what string) error {
	return fmt.Errorf("store: %T has no %s: %w", s.d, what, errors.ErrUnsupported)
}

// Create creates a session (see Driver.Create).
func (s *Store) Create(ctx context.Context, req CreateRequest) (*Session, error) {
	if err := ValidateCreate(req); err != nil {
		return nil, err
	}
	sess, err := s.d.Create(ctx, req)
	return sess, s.classify(err)
}

// Get returns a tenant's session (see Driver.Get).
func (s *Store) Get(ctx context.Context, tenant, id string) (*Session, error) {
	if err := ValidateKey(tenant, id); err != nil {
		return nil, err
	}
	sess, err := s.d.Get(ctx, tenant, id)
	return sess, s.classify(err)
}

// List lists sessions (see Driver.List).
func (s *Store) List(ctx context.Context, req ListRequest) (*ListResponse, error) {
	if _, _, err := ValidateList(req); err != nil {
		return nil, err
	}
	resp, err := s.d.List(ctx, req)
	return resp, s.classify(err)
}

// Delete deletes a tenant's session (see Driver.Delete).
func (s *Store) Delete(ctx context.Context, tenant, id string) error {
	if err := ValidateKey(tenant, id); err != nil {
		return err
	}
	return s.classify(s.d.Delete(ctx, tenant, id))
}

// Append appends to a session's log (see Driver.Append). The driver
// checks the request as it encodes its steps (ValidateAppendEncoded),
// which it needs to do anyway.
func (s *Store) Append(ctx context.Context, req AppendRequest) (*AppendResponse, error) {
	resp, err := s.d.Append(ctx, req)
	return resp, s.classify(err)
}

// Read reads a session's log (see Driver.Read).
func (s *Store) Read(ctx context.Context, req ReadRequest) (*ReadResponse, error) {
	if err := validateRead(req); err != nil {
		return nil, err
	}
	resp, err := s.d.Read(ctx, req)
	return resp, s.classify(err)
}

// Prune applies retention (see Driver.Prune).
func (s *Store) Prune(ctx context.Context, req PruneRequest) (*PruneResponse, error) {
	resp, err := s.d.Prune(ctx, req)
	return resp, s.classify(err)
}

// Close closes the store's driver (see Driver.Close).
func (s *Store) Close() error { return s.classify(s.d.Close()) }

// Head returns the head of a tenant's session: from the driver's Head
// when it is a HeadReader (see there), else from Get.
func (s *Store) Head(ctx context.Context, tenant, id string) (Head, error) {
	if err := ValidateKey(tenant, id); err != nil {
		return Head{}, err
	}
	if s.caps[CanReadHead] {
		h, err := s.head.Head(ctx, tenant, id)
		return h, s.classify(err)
	}
	sess, err := s.d.Get(ctx, tenant, id)
	if err != nil {
		return Head{}, s.classify(err)
	}
	return Head{CreatedAt: sess.CreatedAt, LastSeq: sess.LastSeq}, nil
}

// Segments returns the segments of a session's visible log (see
// Segmenter), or an error matching errors.ErrUnsupported when the driver
// does not tell them (Supports(CanSegment)).
func (s *Store) Segments(ctx context.Context, tenant, id string) ([]Segment, error) {
	if !s.caps[CanSegment] {
		return nil, s.unsupported("segments (store.Segmenter)")
	}
	if err := ValidateKey(tenant, id); err != nil {
		return nil, err
	}
	segs, err := s.seg.Segments(ctx, tenant, id)
	return segs, s.classify(err)
}

// Ping tells whether the store can serve (see Pinger), or returns an
// error matching errors.ErrUnsupported when the driver cannot tell
// (Supports(CanPing)).
func (s *Store) Ping(ctx context.Context) error {
	if !s.caps[CanPing] {
		return s.unsupported("readiness check (store.Pinger)")
	}
	return s.classify(s.ping.Ping(ctx))
}

// ImportEntries creates a session with its log exactly as given (see
// Importer). It first checks them: a valid session without a parent, and a
// log that fits it, numbered in order up to its LastSeq, each record naming
// earlier steps. It returns an error matching errors.ErrUnsupported when
// the driver cannot import (Supports(CanImport)).
// Import and ImportSession are the usual way in.
func (s *Store) ImportEntries(ctx context.Context, sess *Session, entries []Entry) error {
	if !s.caps[CanImport] {
		return s.unsupported("exact import (store.Importer)")
	}
	if err := validateImport(sess, entries); err != nil {
		return err
	}
	return s.classify(s.imp.ImportEntries(ctx, sess, entries))
}

// Feed returns the store's change feed, with its requests checked as the
// store's are, and whether the driver has one (Supports(CanFeed)). The
// feed has leases (LeaserOf) when the driver has them too.
func (s *Store) Feed() (Feed, bool) {
	if !s.caps[CanFeed] {
		return nil, false
	}
	return s, true
}

// ReadFeed reads the change feed (see Feed).
func (s *Store) ReadFeed(ctx context.Context, req FeedRequest) (*FeedResponse, error) {
	if !s.caps[CanFeed] {
		return nil, s.unsupported("change feed (store.Feed)")
	}
	if _, err := ValidateFeed(req); err != nil {
		return nil, err
	}
	resp, err := s.feed.ReadFeed(ctx, req)
	return resp, s.classify(err)
}

// FeedHead returns the feed's watermark (see Feed).
func (s *Store) FeedHead(ctx context.Context) (int64, error) {
	if !s.caps[CanFeed] {
		return 0, s.unsupported("change feed (store.Feed)")
	}
	head, err := s.feed.FeedHead(ctx)
	return head, s.classify(err)
}

// LoadCursor returns a feed consumer's saved cursor (see Feed).
func (s *Store) LoadCursor(ctx context.Context, consumer string) (FeedCursor, error) {
	if !s.caps[CanFeed] {
		return FeedCursor{}, s.unsupported("change feed (store.Feed)")
	}
	if err := validateConsumer(consumer); err != nil {
		return FeedCursor{}, err
	}
	cur, err := s.feed.LoadCursor(ctx, consumer)
	return cur, s.classify(err)
}

// SaveCursor saves a feed consumer's cursor (see Feed).
func (s *Store) SaveCursor(ctx context.Context, consumer string, c FeedCursor) error {
	if !s.caps[CanFeed] {
		return s.unsupported("change feed (store.Feed)")
	}
	if err := validateSaveCursor(consumer, c); err != nil {
		return err
	}
	return s.classify(s.feed.SaveCursor(ctx, consumer, c))
}

// DropCursor removes a retired feed consumer's cursor (see Feed).
func (s *Store) DropCursor(ctx context.Context, consumer string) error {
	if !s.caps[CanFeed] {
		return s.unsupported("change feed (store.Feed)")
	}
	if err := validateConsumer(consumer); err != nil {
		return err
	}
	return s.classify(s.feed.DropCursor(ctx, consumer))
}

// AcquireLease takes a feed consumer's lease (see Leaser).
func (s *Store) AcquireLease(ctx context.Context, req LeaseRequest) (Lease, error) {
	if !s.caps[CanLease] {
		return Lease{}, s.unsupported("leases (store.Leaser)")
	}
	if err := ValidateLease(req); err != nil {
		return Lease{}, err
	}
	l, err := s.leaser.AcquireLease(ctx, req)
	return l, s.classify(err)
}

// RenewLease renews a feed consumer's lease (see Leaser).
func (s *Store) RenewLease(ctx context.Context, req LeaseRequest) (Lease, error) {
	if !s.caps[CanLease] {
		return Lease{}, s.unsupported("leases (store.Leaser)")
	}
	if err := ValidateLease(req); err != nil {
		return Lease{}, err
	}
	l, err := s.leaser.RenewLease(ctx, req)
	return l, s.classify(err)
}

// ReleaseLease gives up a feed consumer's lease (see Leaser).
func (s *Store) ReleaseLease(ctx context.Context, consumer, holder string) error {
	if !s.caps[CanLease] {
		return s.unsupported("leases (store.Leaser)")
	}
	if err := validateHolder(consumer, holder); err != nil {
		return err
	}
	return s.classify(s.leaser.ReleaseLease(ctx, consumer, holder))
}

// SaveLeasedCursor saves a feed consumer's cursor while holder holds its
// lease (see Leaser).
func (s *Store) SaveLeasedCursor(ctx context.Context, consumer, holder string, c FeedCursor) error {
	if !s.caps[CanLease] {
		return s.unsupported("leases (store.Leaser)")
	}
	if err := validateHolder(consumer, holder); err != nil {
		return err
	}
	if err := validateSaveCursor(consumer, c); err != nil {
		return err
	}
	return s.classify(s.leaser.SaveLeasedCursor(ctx, consumer, holder, c))
}

// LeaserOf returns the leases of a change feed: those of the store whose
// feed it is (Store.Feed), when its driver has them, or the feed itself
// when it is a Leaser of its own.
func LeaserOf(f Feed) (Leaser, bool) {
	if s, ok := f.(*Store); ok {
		return s, s.caps[CanLease]
	}
	l, ok := f.(Leaser)
	return l, ok
}

// Every Store is a Driver (New of one returns it), and hands out its
// feed and leases as itself.
var (
	_ Driver = (*Store)(nil)
	_ Feed   = (*Store)(nil)
	_ Leaser = (*Store)(nil)
)
