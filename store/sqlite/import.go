package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

var _ store.Importer = (*Store)(nil)

// ImportEntries implements store.Importer: it creates session sess with
// its log exactly as given (sequence numbers, times and all), in one
// transaction.
func (s *Store) ImportEntries(ctx context.Context, sess *store.Session, entries []store.Entry) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := store.ValidateImport(sess, entries); err != nil {
		return err
	}
	// Encode before the transaction: it holds the write lock.
	bodies := make([][]byte, len(entries))
	for i, e := range entries {
		var err error
		switch e.Kind {
		case store.StepEntry:
			bodies[i], err = store.EncodeStep(e.Step)
		case store.CompactionEntry:
			bodies[i], err = store.EncodeCompaction(e.Compaction)
		}
		if err != nil {
			return fmt.Errorf("entries[%d]: %w", i, err)
		}
	}
	r := &sessionRow{Session: *sess.Clone()}
	r.ParentID, r.ForkSeq = "", 0
	return s.write(ctx, "import", func(tx querier) error {
		var exists int
		err := tx.QueryRowContext(ctx, "SELECT 1 FROM sessions WHERE tenant = ? AND id = ?", r.Tenant, r.ID).Scan(&exists)
		if err == nil {
			return fmt.Errorf("sqlite: import: session %q already exists: %w", r.ID, agentmem.ErrConflict)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := insertSession(ctx, tx, r); err != nil {
			return err
		}
		for i, e := range entries {
			var stepID any
			if e.Kind == store.StepEntry {
				stepID = e.Step.Info().ID
			}
			if _, err := tx.ExecContext(ctx, insertEntry, r.Tenant, r.ID, e.Seq, string(e.Kind), stepID, bodies[i], toNanos(e.Time)); err != nil {
				return err
			}
		}
		return nil
	})
}
