package sqlite

import (
	"context"
	"time"

	"github.com/agentmem/agentmem/store"
)

// Delete implements store.Store. In one transaction it first gives every
// session that reads its history through this one (its branches) a copy
// of the entries they see, then deletes the session and its log.
// Deleting an expired session that Prune has not removed yet succeeds.
func (s *Store) Delete(ctx context.Context, tenant, id string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := store.ValidateKey(tenant, id); err != nil {
		return err
	}
	return s.write(ctx, "delete", func(tx querier) error {
		sess, err := loadSession(ctx, tx, tenant, id, time.Time{}, true)
		if err != nil {
			return err
		}
		_, err = deleteSession(ctx, tx, sess)
		return err
	})
}

// deleteSession deletes a session inside a write transaction, after
// handing its history to the sessions that read through it, and returns
// the number of entries deleted with it.
//
// A session d with base p sees p's own entries with p.baseSeq < seq <=
// d.baseSeq and, below that, p's base up to min(d.baseSeq, p.baseSeq).
// So d gets copies of the first part and reads the rest from p's base:
// its visible log is unchanged, and nothing is copied twice. (The
// provenance d.ParentID and d.ForkSeq does not change.)
func deleteSession(ctx context.Context, tx querier, p *sessionRow) (int, error) {
	rows, err := tx.QueryContext(ctx, "SELECT id, base_seq FROM sessions WHERE tenant = ? AND base_id = ?", p.Tenant, p.ID)
	if err != nil {
		return 0, err
	}
	type dep struct {
		id      string
		baseSeq int64
	}
	var deps []dep
	for rows.Next() {
		var d dep
		if err := rows.Scan(&d.id, &d.baseSeq); err != nil {
			rows.Close()
			return 0, err
		}
		deps = append(deps, d)
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	for _, d := range deps {
		if _, err := tx.ExecContext(ctx, `INSERT INTO entries (tenant, session_id, seq, kind, step_id, body, created_at)
			SELECT tenant, ?, seq, kind, step_id, body, created_at FROM entries
			WHERE tenant = ? AND session_id = ? AND seq > ? AND seq <= ?`,
			d.id, p.Tenant, p.ID, p.baseSeq, d.baseSeq); err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE sessions SET base_id = ?, base_seq = ? WHERE tenant = ? AND id = ?",
			nullString(p.baseID), min(d.baseSeq, p.baseSeq), p.Tenant, d.id); err != nil {
			return 0, err
		}
	}
	res, err := tx.ExecContext(ctx, "DELETE FROM entries WHERE tenant = ? AND session_id = ?", p.Tenant, p.ID)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM sessions WHERE tenant = ? AND id = ?", p.Tenant, p.ID); err != nil {
		return 0, err
	}
	return int(n), nil
}

// expired lists the keys of the sessions expired at now.
func expired(ctx context.Context, q querier, now time.Time) ([]store.Key, error) {
	rows, err := q.QueryContext(ctx, `SELECT tenant, id FROM sessions
		WHERE expires_at IS NOT NULL AND expires_at <= ? AND retention <> 'persistent' ORDER BY expires_at`, toNanos(now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []store.Key
	for rows.Next() {
		var k store.Key
		if err := rows.Scan(&k.Tenant, &k.ID); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}
