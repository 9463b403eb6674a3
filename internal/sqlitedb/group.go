package sqlitedb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"

	"github.com/agentmem/agentmem"
)

// MaxGroup bounds the writes that share one transaction of a Group, so
// that one commit does not hold the write lock for long.
const MaxGroup = 128

// ErrGroupClosed is the error of a Group's Write after Close. It wraps
// agentmem.ErrUnavailable.
var ErrGroupClosed = fmt.Errorf("sqlite: group writer closed (%w)", agentmem.ErrUnavailable)

// Group commits the write transactions of many goroutines together.
//
// A durable commit costs an fsync of the WAL, and SQLite has one writer at
// a time. So writes that each commit alone are limited to one fsync's
// worth of throughput however many goroutines make them, plus a
// transaction's fixed costs each. A Group's goroutine takes the writes
// that are waiting and runs them one after the other in one transaction,
// each in a SAVEPOINT of its own. Then it commits once.
//
// Each write keeps its own outcome. One whose function fails is rolled
// back to its savepoint and gets the error, and the others go on. No write
// returns before the COMMIT that stores it returns. If the COMMIT fails,
// every write of the batch gets the error and none is stored.
//
// The session store in store/sqlite has a committer of its own, made for
// appends: it caches statements and encodes steps before taking the write
// lock.
type Group struct {
	db   *sql.DB
	q    chan *groupOp
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

// groupOp is a write waiting for the Group's goroutine.
type groupOp struct {
	ctx context.Context
	fn  func(ctx context.Context, tx *sql.Tx) error
	// redoable: the write need not be durable when it commits
	// (WriteRedoable).
	redoable bool
	err      error
	done     chan struct{}
}

// NewGroup starts a Group writing to db, normally a DB's W. Close stops
// it.
func NewGroup(db *sql.DB) *Group {
	g := &Group{db: db, q: make(chan *groupOp), quit: make(chan struct{}), done: make(chan struct{})}
	go g.run()
	return g
}

// Write runs fn in a write transaction, possibly shared with other writes.
// It returns once the transaction has committed (nil) or fn or the commit
// has failed. fn gets a context that is never cancelled, since
// interrupting a statement would roll back the shared transaction, other
// writes' work included. ctx bounds only the wait for the writer. Once fn
// has started, Write waits for the commit even if ctx ends, so that it
// never reports a failure for a write that was stored.
func (g *Group) Write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	return g.write(ctx, fn, false)
}

// WriteRedoable is Write for a write that need not be durable when it
// commits, because it is redone after a power failure loses it (see
// sqldb.Redoable). A batch of such writes alone commits with
// synchronous=NORMAL, without an fsync. The WAL frames it appends are
// synced by the next durable commit or checkpoint, and a power failure
// before that loses the batch whole. A batch that holds a durable write
// commits durably, the redoable ones included.
func (g *Group) WriteRedoable(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	return g.write(ctx, fn, true)
}

func (g *Group) write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error, redoable bool) error {
	op := &groupOp{ctx: ctx, fn: fn, redoable: redoable, done: make(chan struct{})}
	select {
	case g.q <- op:
	case <-ctx.Done():
		return ctx.Err()
	case <-g.quit:
		return ErrGroupClosed
	}
	<-op.done
	return op.err
}

// Close stops the Group once the batch it is running, if any, has
// committed. Later writes fail with ErrGroupClosed. It does not close the
// DB.
func (g *Group) Close() {
	g.once.Do(func() { close(g.quit) })
	<-g.done
}

// run takes batches of writes until Close.
func (g *Group) run() {
	defer close(g.done)
	for {
		var first *groupOp
		select {
		case first = <-g.q:
		case <-g.quit:
			return
		}
		batch := []*groupOp{first}
	collect:
		for len(batch) < MaxGroup {
			select {
			case op := <-g.q:
				batch = append(batch, op)
			default:
				break collect
			}
		}
		g.runBatch(batch)
		for _, op := range batch {
			close(op.done)
		}
	}
}

// runBatch runs a batch of writes in one transaction and sets each one's
// result.
func (g *Group) runBatch(batch []*groupOp) {
	ctx := context.Background()
	failAll := func(err error) {
		for _, op := range batch {
			op.err = err
		}
	}
	redoable := true
	for _, op := range batch {
		redoable = redoable && op.redoable
	}
	begin := g.db.BeginTx
	if redoable {
		conn, err := g.db.Conn(ctx)
		if err != nil {
			failAll(err)
			return
		}
		defer restoreSync(conn)
		if _, err := conn.ExecContext(ctx, "PRAGMA synchronous = NORMAL"); err != nil {
			failAll(err)
			return
		}
		begin = conn.BeginTx
	}
	tx, err := begin(ctx, nil)
	if err != nil {
		failAll(err)
		return
	}
	if len(batch) == 1 {
		// Alone in its transaction, a write needs no savepoint: if it
		// fails, the transaction is rolled back. (A savepoint costs a copy
		// of every page the write changes, in the statement journal.)
		op := batch[0]
		if op.err = op.ctx.Err(); op.err == nil {
			op.err = op.fn(ctx, tx)
		}
		if op.err != nil {
			tx.Rollback() //nolint:errcheck // the write fails either way
			return
		}
		op.err = tx.Commit()
		return
	}
	for _, op := range batch {
		if err := op.ctx.Err(); err != nil {
			op.err = err
			continue
		}
		if _, err := tx.ExecContext(ctx, "SAVEPOINT grp"); err != nil {
			tx.Rollback() //nolint:errcheck // the batch fails either way
			failAll(err)
			return
		}
		if op.err = op.fn(ctx, tx); op.err != nil {
			// An I/O error or a full disk may have ended the transaction
			// behind our back: if it is gone, so is the batch.
			_, rbErr := tx.ExecContext(ctx, "ROLLBACK TO grp")
			if rbErr == nil {
				_, rbErr = tx.ExecContext(ctx, "RELEASE grp")
			}
			if rbErr != nil {
				tx.Rollback() //nolint:errcheck // the batch fails either way
				failAll(fmt.Errorf("%w (and rolling it back failed, so the writes batched with it failed too: %v)", op.err, rbErr))
				return
			}
			continue
		}
		if _, err := tx.ExecContext(ctx, "RELEASE grp"); err != nil {
			tx.Rollback() //nolint:errcheck // the batch fails either way
			failAll(err)
			return
		}
	}
	if err := tx.Commit(); err != nil {
		failAll(err)
	}
}

// restoreSync makes conn, the write connection, commit durably again
// (synchronous=FULL, as every connection is opened) and returns it to its
// pool. A connection that fails to is discarded, so that no durable write
// ever commits on it.
func restoreSync(conn *sql.Conn) {
	if _, err := conn.ExecContext(context.Background(), "PRAGMA synchronous = FULL"); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	_ = conn.Close()
}
