package postgres

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Servers that share a database must agree on the time, or a session
// with a TTL expires at a different moment on each. One whose clock runs
// ahead answers 404 for it while others serve it, and its pruner deletes
// it for everyone. So a store without Options.Clock reads the database's
// clock. A query for every operation would cost a round trip each, so
// the store keeps the database's offset from the local clock instead. It
// measures it when it opens and every clockEvery after, at the middle of
// the quickest of clockSamples round trips: within half a round trip of
// the truth. Prune, whose deletions cannot be undone, reads the
// database's clock by a query each time.
const (
	clockEvery   = time.Minute
	clockSamples = 3
)

// dbClock is the database's clock read without a query: the local clock
// plus the measured offset.
type dbClock struct {
	pool   *pgxpool.Pool
	local  func() time.Time
	offset atomic.Int64 // nanoseconds from the local clock to the database's
	stop   chan struct{}
	done   chan struct{}
}

// newDBClock measures the database's offset from local and keeps it up to
// date in the background until close.
func newDBClock(ctx context.Context, pool *pgxpool.Pool, local func() time.Time) (*dbClock, error) {
	c := &dbClock{pool: pool, local: local, stop: make(chan struct{}), done: make(chan struct{})}
	if err := c.measure(ctx); err != nil {
		return nil, err
	}
	go c.run()
	return c, nil
}

// Now returns the database's time as the last measurement puts it.
func (c *dbClock) Now() time.Time { return c.local().Add(time.Duration(c.offset.Load())) }

// measure sets the offset from the quickest of clockSamples queries of
// the database's clock.
func (c *dbClock) measure(ctx context.Context) error {
	best := time.Duration(-1)
	for range clockSamples {
		var db time.Time
		t0 := c.local()
		if err := c.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&db); err != nil {
			return err
		}
		t1 := c.local()
		if rtt := t1.Sub(t0); best < 0 || rtt < best {
			best = rtt
			c.offset.Store(int64(db.Sub(t0.Add(rtt / 2))))
		}
	}
	return nil
}

// run measures the offset every clockEvery until close. A failed
// measurement keeps the last offset.
func (c *dbClock) run() {
	defer close(c.done)
	t := time.NewTicker(clockEvery)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = c.measure(ctx)
		cancel()
	}
}

// close stops the measurements.
func (c *dbClock) close() {
	close(c.stop)
	<-c.done
}

// exact reads the database's clock by a query.
func (c *dbClock) exact(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := c.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&t)
	return t, err
}
