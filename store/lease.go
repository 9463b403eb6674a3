package store

import (
	"context"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
)

// Leaser is implemented by stores whose feed consumers can be exclusive, as
// every backend of this module is. A lease on a consumer's name says which
// one of the followers of that consumer, in every process sharing the
// store, applies the changes. A follower takes the lease before it reads
// (AcquireLease) and renews it well before it expires (RenewLease). It
// saves its cursor only while it still holds it (SaveLeasedCursor) and
// gives it up when it stops (ReleaseLease). The others wait, trying to take
// it; one of them takes over from the cursor saved when it is released or
// expires (its holder crashed).
//
// A lease is kept by the store's clock (Options.Clock of each backend:
// the database's for PostgreSQL), the one clock every process sharing
// the store reads. A holder knows it holds its lease for the TTL after
// it sent the request that took or renewed it, by its own clock, and
// must stop applying when that has passed without a renewal: the lease
// may then be someone else's. The holder of record (the last to take
// the lease) stays so after its lease expires, until another holder
// takes it or it releases it: a holder that renews late, when nobody
// took the lease meanwhile, keeps it.
type Leaser interface {
	// AcquireLease takes the lease on req.Consumer for req.Holder until
	// req.TTL from now, unless another holder holds it and it has not
	// expired; a holder that already holds it renews it. Lease.Held says
	// whether req.Holder holds it now.
	AcquireLease(ctx context.Context, req LeaseRequest) (Lease, error)
	// RenewLease extends req.Holder's lease to req.TTL from now if
	// req.Holder is still its holder of record. Otherwise it changes
	// nothing and returns Held false with the current holder, if any. A
	// holder whose lease was taken over or released cannot take it back by
	// renewing it, since the cursor may have moved meanwhile.
	RenewLease(ctx context.Context, req LeaseRequest) (Lease, error)
	// ReleaseLease gives up holder's lease on consumer, so that another
	// holder can take it at once. It does nothing when holder is not the
	// holder of record.
	ReleaseLease(ctx context.Context, consumer, holder string) error
	// SaveLeasedCursor saves consumer's cursor as Feed.SaveCursor does,
	// in one transaction with the check that holder is the holder of
	// record of consumer's lease; when it is not, nothing is saved and
	// the error is ErrLeaseLost. A holder that lost its lease can thus
	// never move the cursor of the holder that took it over: a holder
	// that takes the lease waits for the save in flight, and reads the
	// cursor after it.
	SaveLeasedCursor(ctx context.Context, consumer, holder string, c FeedCursor) error
}

// LeaseRequest names a lease, its would-be holder and how long it lasts.
type LeaseRequest struct {
	// Consumer is the feed consumer whose lease it is: 1 to 64 characters
	// from [A-Za-z0-9._:-], the first a letter or digit.
	Consumer string
	// Holder names the follower asking: 1 to MaxHolderLen bytes of
	// printable text, unique to it (a host, a process and a random part).
	Holder string
	// TTL is how long the lease lasts from now unless renewed: from
	// MinLeaseTTL to MaxLeaseTTL.
	TTL time.Duration
}

// Lease is the state of a lease after a request.
type Lease struct {
	// Held says that the requester holds the lease now.
	Held bool
	// Holder is the lease's holder of record: the requester when Held,
	// else the holder that keeps it from the requester; empty when the
	// lease has none (released, or never taken).
	Holder string
	// Expires is when Holder's lease expires by the store's clock, at
	// the store's precision (microseconds); zero when Holder is empty.
	Expires time.Time
}

// Limits of a LeaseRequest.
const (
	MaxHolderLen = 128
	MinLeaseTTL  = time.Millisecond
	MaxLeaseTTL  = 24 * time.Hour
)

// ErrLeaseLost is returned by SaveLeasedCursor when the holder does not
// hold the consumer's lease: another holder took it over, or it was
// released. It wraps agentmem.ErrConflict.
var ErrLeaseLost = fmt.Errorf("store: the consumer's lease is not held by this holder (%w)", agentmem.ErrConflict)

// ValidateLease checks a LeaseRequest.
func ValidateLease(req LeaseRequest) error {
	if err := validateHolder(req.Consumer, req.Holder); err != nil {
		return err
	}
	if req.TTL < MinLeaseTTL || req.TTL > MaxLeaseTTL {
		return fmt.Errorf("store: lease TTL %v is not between %v and %v: %w", req.TTL, MinLeaseTTL, MaxLeaseTTL, agentmem.ErrInvalid)
	}
	return nil
}

// validateHolder checks the consumer and holder of a lease: a valid
// consumer name (validateConsumer) and 1 to MaxHolderLen bytes of
// printable UTF-8 text.
func validateHolder(consumer, holder string) error {
	if err := validateConsumer(consumer); err != nil {
		return err
	}
	printable := utf8.ValidString(holder)
	for _, r := range holder {
		if !unicode.IsPrint(r) {
			printable = false
			break
		}
	}
	if holder == "" || len(holder) > MaxHolderLen || !printable {
		return fmt.Errorf("store: lease holder %.80q: 1 to %d bytes of printable text: %w", holder, MaxHolderLen, agentmem.ErrInvalid)
	}
	return nil
}
