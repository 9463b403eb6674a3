package sqlstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storekit"
)

// The feed consumers' leases (store.Leaser) are the rows of feed_leases,
// one per consumer whose lease was taken and not released. A row holds the
// holder of record and when its hold expires, by the store's clock. That
// clock is a parameter of every statement, as every other time the store
// writes. A lease is
// taken by one upsert whose condition is that the row is the taker's or
// has expired, so of two takers one wins and the other finds the
// winner's row; SQLite serializes them, PostgreSQL's ON CONFLICT locks
// the row. A leased cursor is saved under a lock of the lease's row (FOR
// UPDATE, on PostgreSQL), so a taker's upsert waits for the save in
// flight and the taker reads the cursor after it. On Citus feed_leases is
// a table of the coordinator, as feed_cursors is.
const (
	// leaseAcquire takes consumer $1's lease for holder $2 until $3
	// unless another holder's lease expires after $4 (now).
	leaseAcquire = `INSERT INTO feed_leases (consumer, holder, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (consumer) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		WHERE feed_leases.holder = excluded.holder OR feed_leases.expires_at <= $4`
	// leaseRenew extends consumer $1's lease to $3 if holder $2 holds it.
	leaseRenew = `UPDATE feed_leases SET expires_at = $3 WHERE consumer = $1 AND holder = $2`
	// leaseRead reads consumer $1's lease: holder, expires_at.
	leaseRead = `SELECT holder, expires_at FROM feed_leases WHERE consumer = $1`
	// leaseRelease deletes consumer $1's lease if holder $2 holds it.
	leaseRelease = `DELETE FROM feed_leases WHERE consumer = $1 AND holder = $2`
	// leaseHeld selects consumer $1's lease if holder $2 holds it.
	leaseHeld = `SELECT 1 FROM feed_leases WHERE consumer = $1 AND holder = $2`
)

// AcquireLease implements store.Leaser.
func (s *Store) AcquireLease(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	now := s.now()
	return s.putLease(ctx, "acquire lease", leaseAcquire, req, now, s.d.time(now))
}

// RenewLease implements store.Leaser.
func (s *Store) RenewLease(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	return s.putLease(ctx, "renew lease", leaseRenew, req, s.now())
}

// putLease runs query, a write of req's lease named op, and reads the
// lease back as req's holder sees it. The query's parameters are the
// consumer, the holder and the expiry (req.TTL after now), then more.
func (s *Store) putLease(ctx context.Context, op, query string, req store.LeaseRequest, now time.Time, more ...any) (store.Lease, error) {
	if err := s.checkOpen(); err != nil {
		return store.Lease{}, err
	}
	args := append([]any{req.Consumer, req.Holder, s.d.time(storekit.LeaseExpiry(now, req.TTL))}, more...)
	var l store.Lease
	err := s.write(ctx, op, func(tx sqldb.Tx) error {
		if _, err := tx.Exec(ctx, query, args...); err != nil {
			return err
		}
		var err error
		l, err = s.readLease(ctx, tx, req.Consumer, req.Holder)
		return err
	})
	return l, err
}

// readLease reads consumer's lease as holder asked for it.
func (s *Store) readLease(ctx context.Context, tx sqldb.Tx, consumer, holder string) (store.Lease, error) {
	var l store.Lease
	err := tx.QueryRow(ctx, leaseRead, consumer).Scan(&l.Holder, s.d.scanTimeNotNull(&l.Expires))
	if errors.Is(err, sqldb.ErrNoRows) {
		return store.Lease{}, nil
	}
	if err != nil {
		return store.Lease{}, err
	}
	l.Expires = l.Expires.UTC()
	l.Held = l.Holder == holder
	return l, nil
}

// ReleaseLease implements store.Leaser.
func (s *Store) ReleaseLease(ctx context.Context, consumer, holder string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	return s.write(ctx, "release lease", func(tx sqldb.Tx) error {
		_, err := tx.Exec(ctx, leaseRelease, consumer, holder)
		return err
	})
}

// SaveLeasedCursor implements store.Leaser: SaveCursor under a lock of
// the holder's lease row, which must be there.
func (s *Store) SaveLeasedCursor(ctx context.Context, consumer, holder string, c store.FeedCursor) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	f := &s.d.feed
	return s.write(ctx, "save cursor", func(tx sqldb.Tx) error {
		var one int
		err := tx.QueryRow(ctx, leaseHeld+s.d.forUpdate, consumer, holder).Scan(&one)
		if errors.Is(err, sqldb.ErrNoRows) {
			return store.ErrLeaseLost
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, f.saveCursor, consumer, strconv.FormatInt(c.Tx, 10), c.Pos); err != nil {
			return err
		}
		return s.trimFeed(ctx, tx)
	})
}
