package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/internal/sqlitedb"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/internal/sqlstore"
)

// Append implements store.Store through the group committer below: the
// calling goroutine checks the request and encodes its steps
// (sqlstore.ValidateAppend) and queues it; the committer runs it
// (sqlstore.AppendTx) in a write transaction, possibly shared with other
// appends that were waiting at the same time, each inside a savepoint of
// its own. So its entries are stored all or none, appenders of one
// session are serialized, and Append returns only after the transaction
// is committed, fsync included.
func (s *Store) Append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	encoded, err := sqlstore.ValidateAppend(s.Store, req)
	if err != nil {
		return nil, err
	}
	return s.commit(ctx, req, encoded)
}

// Group commit.
//
// A durable append costs one fsync of the WAL, and SQLite has one writer
// at a time, so appends that each commit alone are limited to one fsync's
// worth of throughput however many goroutines make them. Instead, one
// goroutine (the committer) takes the appends that are waiting, runs them
// one after the other in a single write transaction, each in a SAVEPOINT
// of its own, and commits once: n waiting appends share one fsync.
//
// Each append keeps its own semantics: one that fails (a conflict, a
// missing session, a bad compaction reference) is rolled back to its
// savepoint and gets its error, and the others go on. Appends in a batch
// see each other's entries in order, exactly as if they had committed
// one after the other, so ExpectedLastSeq and step-ID retries behave as
// without batching. No append is acknowledged before the COMMIT returns;
// if the COMMIT fails, every append of the batch gets the error and none
// is stored.

// maxBatch bounds the appends that share one transaction, so that one
// commit does not hold the write lock for long.
const maxBatch = 128

// appendOp is an append waiting for the committer.
type appendOp struct {
	ctx context.Context
	req store.AppendRequest
	// encoded are req.Steps encoded by store.ValidateAppendEncoded.
	encoded [][]byte
	resp    *store.AppendResponse
	err     error
	done    chan struct{}
}

// commit hands a validated append to the committer and waits for its
// result. Once the committer has taken it, it waits for the commit even if
// ctx is cancelled meanwhile, so that it never reports a failure for an
// append that was stored.
func (s *Store) commit(ctx context.Context, req store.AppendRequest, encoded [][]byte) (*store.AppendResponse, error) {
	op := &appendOp{ctx: ctx, req: req, encoded: encoded, done: make(chan struct{})}
	select {
	case s.appendQ <- op:
	case <-ctx.Done():
		return nil, fmt.Errorf("sqlite: append: %w", sqlitedb.Classify(ctx.Err()))
	case <-s.quit:
		return nil, store.ErrClosed
	}
	<-op.done
	return op.resp, op.err
}

// committer runs batches of appends until the store closes.
func (s *Store) committer() {
	defer close(s.committerDone)
	for {
		var first *appendOp
		select {
		case first = <-s.appendQ:
		case <-s.quit:
			return
		}
		batch := []*appendOp{first}
	collect:
		for len(batch) < maxBatch {
			select {
			case op := <-s.appendQ:
				batch = append(batch, op)
			default:
				break collect
			}
		}
		s.runBatch(batch)
		for _, op := range batch {
			close(op.done)
		}
		s.wStmts.Warm(context.Background())
	}
}

// runBatch runs a batch of appends in one transaction and sets each
// one's result.
func (s *Store) runBatch(batch []*appendOp) {
	// Statements run without the appends' contexts: interrupting one
	// statement would roll back the whole transaction, the other appends'
	// work included. A cancelled append is skipped before it starts.
	ctx := context.Background()
	now := sqlstore.Now(s.Store)
	failAll := func(err error) {
		for _, op := range batch {
			op.resp, op.err = nil, err
		}
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		failAll(sqlstore.Err(s.Store, "append", err))
		return
	}
	for _, op := range batch {
		if err := op.ctx.Err(); err != nil {
			op.err = fmt.Errorf("sqlite: append: %w", sqlitedb.Classify(err))
			continue
		}
		op.resp, op.err = s.runOne(ctx, s.wStmts.Tx(tx), op, now)
		if op.err != nil && !sqlstore.IsStoreErr(op.err) {
			// A database error (I/O, disk full...) may have ended the
			// transaction behind our back: give up on the whole batch
			// rather than run the rest outside it.
			tx.Rollback() //nolint:errcheck // the batch fails either way
			failAll(sqlstore.Err(s.Store, "append", op.err))
			return
		}
	}
	if err := tx.Commit(); err != nil {
		failAll(sqlstore.Err(s.Store, "append: commit", err))
	}
}

// runOne runs one append of a batch inside a savepoint, and rolls back to
// it if the append fails, so that it changes nothing.
func (s *Store) runOne(ctx context.Context, tx sqldb.Querier, op *appendOp, now time.Time) (*store.AppendResponse, error) {
	if _, err := tx.Exec(ctx, "SAVEPOINT append"); err != nil {
		return nil, err
	}
	resp, err := sqlstore.AppendTx(ctx, s.Store, tx, op.req, op.encoded, now)
	if err != nil {
		_, rbErr := tx.Exec(ctx, "ROLLBACK TO append")
		if rbErr == nil {
			_, rbErr = tx.Exec(ctx, "RELEASE append")
		}
		if rbErr != nil {
			// Not a store error: runBatch gives up on the batch.
			return nil, fmt.Errorf("rolling back a failed append (%v) to its savepoint: %w", err, rbErr)
		}
		return nil, err
	}
	if _, err := tx.Exec(ctx, "RELEASE append"); err != nil {
		return nil, err
	}
	return resp, nil
}
