package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// ImportEntries implements store.Importer: it creates the session and its
// log exactly as given, in one transaction. The entries go in through
// COPY, so importing a long session is one round trip of data.
func (s *Store) ImportEntries(ctx context.Context, sess *store.Session, entries []store.Entry) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := store.ValidateImport(sess, entries); err != nil {
		return err
	}
	if err := checkSessionText(sess.Tenant, sess.UserID, sess.Agent); err != nil {
		return err
	}
	rows := make([][]any, len(entries))
	seqs := make([]int64, len(entries))
	for i, e := range entries {
		seqs[i] = e.Seq
		var (
			stepID *string
			body   []byte
			err    error
		)
		switch e.Kind {
		case store.StepEntry:
			id := e.Step.Info().ID
			if err := checkNoNUL(fmt.Sprintf("entries[%d].step.id", i), id); err != nil {
				return err
			}
			stepID = &id
			body, err = store.EncodeStep(numbered(e.Step, e.Seq))
		case store.CompactionEntry:
			body, err = store.EncodeCompaction(e.Compaction)
		}
		if err != nil {
			return fmt.Errorf("entries[%d]: %w", i, err)
		}
		rows[i] = []any{sess.Tenant, sess.ID, e.Seq, string(e.Kind), stepID, body, e.Time}
	}
	r := &sessionRow{Session: *sess.Clone()}
	return s.write(ctx, "import", func(tx pgx.Tx) error {
		ok, err := insertSession(ctx, tx, r)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("postgres: session %q already exists: %w", sess.ID, agentmem.ErrConflict)
		}
		if len(rows) == 0 {
			return nil
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"entries"},
			[]string{"tenant", "session_id", "seq", "kind", "step_id", "body", "created_at"}, pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, feedAppendSQL+` SELECT 'append', $1, $2, u.seq FROM unnest($3::bigint[]) AS u (seq) ORDER BY u.seq`,
			sess.ID, sess.Tenant, seqs)
		return err
	})
}
