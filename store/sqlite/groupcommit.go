package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentmem/agentmem/internal/sqlitedb"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/internal/sqlstore"
)

// Append implements store.Driver through the file's group committer
// (sqlitedb.Group). The calling goroutine checks the request, encodes its
// steps (sqlstore.ValidateAppend) and queues it. The committer runs it
// (sqlstore.AppendTx) in a write transaction, each inside a savepoint of its
// own. The transaction may be shared with other appends, and with the other
// writes to the file (the recall index's, the facts', the blocks') that were
// waiting at the same time. So its entries are stored all or none, appenders
// of one session are serialized, and Append returns only after the
// transaction is committed, fsync included.
//
// Appends in a batch see each other's entries in order, exactly as if
// they had committed one after the other, so ExpectedLastSeq and step-ID
// retries behave as without batching. One that fails (a conflict, a
// missing session, a bad compaction reference) is rolled back to its
// savepoint and gets its error, and the others go on; if the COMMIT fails,
// every write of the batch gets the error and none is stored.
func (s *Store) Append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	encoded, err := sqlstore.ValidateAppend(s.Store, req)
	if err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	var resp *store.AppendResponse
	err = s.group.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		resp, err = sqlstore.AppendTx(ctx, s.Store, s.wStmts.Tx(tx), req, encoded, sqlstore.Now(s.Store))
		return err
	})
	switch {
	case err == nil:
		return resp, nil
	case sqlstore.IsStoreErr(err):
		return nil, err
	case errors.Is(err, sqlitedb.ErrGroupClosed):
		return nil, store.ErrClosed
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return nil, fmt.Errorf("sqlite: append: %w", err)
	}
	return nil, sqlstore.Err(s.Store, "append", err)
}
