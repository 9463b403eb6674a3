package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/agentmem/agentmem/internal/pgdb"
	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/store/internal/sqlstore"
)

// copyEntries inserts an imported session's entries with COPY, so that
// importing a long session is one round trip of data
// (sqlstore.Options.InsertEntries: the shared ImportEntries validates,
// encodes, creates the session and records the feed).
func copyEntries(ctx context.Context, tx sqldb.Tx, tenant, id string, rows []sqlstore.EntryRow) error {
	ptx, ok := pgdb.PgxTx(tx)
	if !ok {
		return errors.New("import: not a PostgreSQL transaction")
	}
	data := make([][]any, len(rows))
	for i, r := range rows {
		var stepID *string
		if r.StepID != "" {
			stepID = &r.StepID
		}
		data[i] = []any{tenant, id, r.Seq, string(r.Kind), stepID, r.Body, r.Time}
	}
	_, err := ptx.CopyFrom(ctx, pgx.Identifier{"entries"},
		[]string{"tenant", "session_id", "seq", "kind", "step_id", "body", "created_at"}, pgx.CopyFromRows(data))
	return err
}
