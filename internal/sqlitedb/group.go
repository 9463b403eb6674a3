package sqlitedb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"slices"
	"sync"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/sqldb"
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
// A file has one Group in a process (DB.Group), shared by every component
// that writes to it: the session store's appends, the recall index, the
// facts, the blocks. So their writes that arrive together share one
// commit and its fsync, rather than queue for the write connection and
// commit one after the other. A write's function must therefore not wait
// for another write of the file (it would wait for itself), and should do
// what it can before it is queued (checking, encoding, tokenizing): the
// function runs while every other writer of the file waits.
type Group struct {
	db    *sql.DB
	stmts *sqldb.StmtCache

	mu      sync.Mutex
	pending []*groupOp
	closed  bool
	// wake has room for one signal: the goroutine takes every pending
	// write when it wakes, so one signal stands for any number of writes.
	wake chan struct{}
	quit chan struct{}
	done chan struct{}
	once sync.Once

	// testQueued, when set, is called with the number of writes pending
	// once a write has been queued; testBatch with each batch's size
	// before it runs. For tests.
	testQueued func(pending int)
	testBatch  func(n int)
}

// groupOp is a write waiting for the Group's goroutine.
type groupOp struct {
	ctx context.Context
	fn  func(ctx context.Context, tx *sql.Tx) error
	// redoable: the write need not be durable when it commits
	// (WriteRedoable).
	redoable bool
	// taken is set, under the Group's lock, when the goroutine takes the
	// write: from then on its caller waits for its outcome.
	taken bool
	err   error
	done  chan struct{}
}

// NewGroup starts a Group writing to db, normally a DB's W, and keeping
// its statements prepared on it (Stmts). Close stops it. A DB on a file
// has the file's Group (DB.Group); NewGroup is for a pool of its own.
func NewGroup(db *sql.DB) *Group {
	g := &Group{db: db, stmts: sqldb.NewStmtCache(db), wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go g.run()
	return g
}

// Stmts is the cache of the statements prepared on the Group's
// connection. A write's function runs its statements through
// Stmts().Tx(tx), and the Group prepares the ones it has not yet after
// the batch (every writer of the file shares the cache, as it shares the
// connection).
func (g *Group) Stmts() *sqldb.StmtCache { return g.stmts }

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
	if err := ctx.Err(); err != nil {
		return err
	}
	op := &groupOp{ctx: ctx, fn: fn, redoable: redoable, done: make(chan struct{})}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return ErrGroupClosed
	}
	g.pending = append(g.pending, op)
	n := len(g.pending)
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
	if g.testQueued != nil {
		g.testQueued(n)
	}
	select {
	case <-op.done:
		return op.err
	case <-ctx.Done():
	}
	// Withdraw the write unless the goroutine has taken it.
	g.mu.Lock()
	if !op.taken {
		if i := slices.Index(g.pending, op); i >= 0 {
			g.pending = slices.Delete(g.pending, i, i+1)
		}
		g.mu.Unlock()
		return ctx.Err()
	}
	g.mu.Unlock()
	<-op.done
	return op.err
}

// Close stops the Group once the batch it is running, if any, has
// committed. The writes still waiting fail with ErrGroupClosed at once, and
// so do later ones. It closes the prepared statements, not the DB.
func (g *Group) Close() {
	g.once.Do(func() {
		g.mu.Lock()
		g.closed = true
		g.mu.Unlock()
		g.failPending()
		close(g.quit)
	})
	<-g.done
}

// run takes batches of writes until Close.
func (g *Group) run() {
	defer close(g.done)
	defer g.stmts.Close()
	for {
		select {
		case <-g.wake:
		case <-g.quit:
			g.failPending()
			return
		}
		for {
			g.mu.Lock()
			if g.closed {
				g.mu.Unlock()
				g.failPending()
				return
			}
			n := min(len(g.pending), MaxGroup)
			batch := slices.Clone(g.pending[:n])
			g.pending = slices.Delete(g.pending, 0, n)
			for _, op := range batch {
				op.taken = true
			}
			more := len(g.pending) > 0
			g.mu.Unlock()
			if n == 0 {
				break
			}
			if g.testBatch != nil {
				g.testBatch(n)
			}
			g.runBatch(batch)
			// Prepare what the batch ran unprepared while no transaction
			// holds the connection. It happens once for each statement,
			// so the writes wait for it rather than the next batch.
			g.stmts.Warm(context.Background())
			for _, op := range batch {
				close(op.done)
			}
			if !more {
				break
			}
		}
	}
}

// run runs the write's function in tx and keeps its error.
func (op *groupOp) run(ctx context.Context, tx *sql.Tx) error {
	op.err = op.fn(ctx, tx)
	return op.err
}

// failPending fails the writes still waiting when the Group closes.
func (g *Group) failPending() {
	g.mu.Lock()
	pending := g.pending
	g.pending = nil
	for _, op := range pending {
		op.taken = true
	}
	g.mu.Unlock()
	for _, op := range pending {
		op.err = ErrGroupClosed
		close(op.done)
	}
}

// runBatch runs a batch of writes and sets each one's result: in one
// transaction, or two or more if the first write of a transaction fails.
//
// The first write of a transaction runs without a savepoint. A savepoint
// costs a copy of every page the write changes, in the statement journal,
// and if the first write fails, rolling back the whole transaction undoes
// it alone; the others then run in a new one. The redoable writes go
// first: they are the recall index's batches, the largest writes of a
// file, while an append changes a few pages. The writes of one goroutine
// are never in one batch together (each waits for its own), so the order
// within a batch is free.
func (g *Group) runBatch(batch []*groupOp) {
	ops := make([]*groupOp, 0, len(batch))
	for _, redoable := range []bool{true, false} {
		for _, op := range batch {
			if op.redoable == redoable {
				ops = append(ops, op)
			}
		}
	}
	for len(ops) > 0 {
		ops = g.runTx(ops)
	}
}

// runTx runs writes in one transaction and sets their results. If the
// first one that runs fails, it rolls back and returns the writes it has
// not run, for a new transaction.
func (g *Group) runTx(ops []*groupOp) (rest []*groupOp) {
	ctx := context.Background()
	// A write whose context has ended does not run.
	for len(ops) > 0 && ops[0].ctx.Err() != nil {
		ops[0].err = ops[0].ctx.Err()
		ops = ops[1:]
	}
	if len(ops) == 0 {
		return nil
	}
	failAll := func(err error) {
		for _, op := range ops {
			op.err = err
		}
	}
	redoable := true
	for _, op := range ops {
		redoable = redoable && op.redoable
	}
	begin := g.db.BeginTx
	if redoable {
		conn, err := g.db.Conn(ctx)
		if err != nil {
			failAll(err)
			return nil
		}
		defer restoreSync(conn)
		if _, err := conn.ExecContext(ctx, "PRAGMA synchronous = NORMAL"); err != nil {
			failAll(err)
			return nil
		}
		begin = conn.BeginTx
	}
	tx, err := begin(ctx, nil)
	if err != nil {
		failAll(err)
		return nil
	}
	if first := ops[0]; first.run(ctx, tx) != nil {
		tx.Rollback() //nolint:errcheck // the write fails either way
		return ops[1:]
	}
	for _, op := range ops[1:] {
		if err := op.ctx.Err(); err != nil {
			op.err = err
			continue
		}
		if _, err := tx.ExecContext(ctx, "SAVEPOINT grp"); err != nil {
			tx.Rollback() //nolint:errcheck // the batch fails either way
			failAll(err)
			return nil
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
				return nil
			}
			continue
		}
		if _, err := tx.ExecContext(ctx, "RELEASE grp"); err != nil {
			tx.Rollback() //nolint:errcheck // the batch fails either way
			failAll(err)
			return nil
		}
	}
	if err := tx.Commit(); err != nil {
		failAll(err)
	}
	return nil
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
