package sqlstore

import (
	"context"
	"fmt"

	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/store"
)

// ImportEntries implements store.Importer: it creates session sess with
// its log exactly as given (sequence numbers, times and all), in one
// transaction. The entries are encoded before the transaction begins
// (on SQLite it holds the write lock), and inserted one statement each
// or, with Options.InsertEntries, as the backend bulk-loads them.
func (s *Store) ImportEntries(ctx context.Context, sess *store.Session, entries []store.Entry) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := s.checkSessionText(sess.Tenant, sess.UserID, sess.Agent); err != nil {
		return err
	}
	rows := make([]EntryRow, len(entries))
	seqs := make([]int64, len(entries))
	for i, e := range entries {
		r := EntryRow{Seq: e.Seq, Kind: e.Kind, Time: e.Time}
		var err error
		switch e.Kind {
		case store.StepEntry:
			r.StepID = e.Step.Info().ID
			if err := s.checkText(fmt.Sprintf("entries[%d].step.id", i), r.StepID); err != nil {
				return err
			}
			r.Body, err = store.EncodeStep(numbered(e.Step, e.Seq))
		case store.CompactionEntry:
			r.Body, err = store.EncodeCompaction(e.Compaction)
		}
		if err != nil {
			return fmt.Errorf("entries[%d]: %w", i, err)
		}
		rows[i], seqs[i] = r, e.Seq
	}
	r := &SessionRow{Session: *sess.Clone()}
	return s.write(ctx, "import", func(tx sqldb.Tx) error {
		ok, err := s.insertSession(ctx, tx, r)
		if err != nil {
			return err
		}
		if !ok {
			return &store.ExistsError{Tenant: sess.Tenant, ID: sess.ID}
		}
		if len(rows) == 0 {
			return nil
		}
		if s.opts.InsertEntries != nil {
			err = s.opts.InsertEntries(ctx, tx, sess.Tenant, sess.ID, rows)
		} else {
			for _, e := range rows {
				if _, err = tx.Exec(ctx, insertEntry, sess.Tenant, sess.ID, e.Seq, string(e.Kind), e.stepIDArg(), e.Body, s.d.time(e.Time)); err != nil {
					break
				}
			}
		}
		if err != nil {
			return err
		}
		return s.recordAppends(ctx, tx, sess.Tenant, sess.ID, seqs)
	})
}
