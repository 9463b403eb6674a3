package sqlite

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentmem/agentmem/store"
)

// Prune implements store.Store. Each session is pruned in a transaction
// of its own, so a long prune never holds the write lock for long and
// appends interleave with it.
//
// Expired sessions are deleted as Delete does (their branches get copies
// of what they inherited). With CoveredBefore, a step entry is deleted
// when it is older than CoveredBefore and in no working set that can see
// it: not in its own session's (the newest compaction's Working list, or
// after that compaction), nor in that of any branch whose visible log
// includes it. Compaction entries are kept.
//
// SessionsDeleted counts the expired sessions deleted; EntriesDeleted
// counts the covered step entries deleted (not the entries of the deleted
// sessions).
func (s *Store) Prune(ctx context.Context, req store.PruneRequest) (*store.PruneResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	now := req.Now
	if now.IsZero() {
		now = s.now()
	}
	resp := &store.PruneResponse{}

	var keys []store.Key
	err := s.read(ctx, "prune", func(tx querier) error {
		var err error
		keys, err = expired(ctx, tx, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		err := s.write(ctx, "prune", func(tx querier) error {
			sess, err := loadSession(ctx, tx, k.Tenant, k.ID, now, true)
			if err != nil || !sess.Expired(now) {
				return nil // deleted, or its expiry changed, meanwhile
			}
			if _, err := deleteSession(ctx, tx, sess); err != nil {
				return err
			}
			resp.SessionsDeleted++
			resp.Deleted = append(resp.Deleted, sess.Session)
			return nil
		})
		if err != nil {
			return resp, err
		}
	}

	if req.CoveredBefore.IsZero() {
		return resp, nil
	}
	// Only a session that owns a compaction entry can own covered steps:
	// the steps it owns come after anything it inherits.
	err = s.read(ctx, "prune", func(tx querier) error {
		rows, err := tx.QueryContext(ctx, "SELECT DISTINCT tenant, session_id FROM entries WHERE kind = 'compaction'")
		if err != nil {
			return err
		}
		defer rows.Close()
		keys = keys[:0]
		for rows.Next() {
			var k store.Key
			if err := rows.Scan(&k.Tenant, &k.ID); err != nil {
				return err
			}
			keys = append(keys, k)
		}
		return rows.Err()
	})
	if err != nil {
		return resp, err
	}
	for _, k := range keys {
		err := s.write(ctx, "prune", func(tx querier) error {
			n, err := pruneCovered(ctx, tx, k, req.CoveredBefore, now)
			resp.EntriesDeleted += n
			return err
		})
		if err != nil {
			return resp, err
		}
	}
	return resp, nil
}

// pruneCovered deletes the covered step entries of one session older than
// cutoff (see Prune) and returns how many it deleted.
func pruneCovered(ctx context.Context, tx querier, k store.Key, cutoff, now time.Time) (int, error) {
	sess, err := loadSession(ctx, tx, k.Tenant, k.ID, now, true)
	if err != nil {
		return 0, nil // deleted meanwhile
	}
	segs, err := segments(ctx, tx, sess)
	if err != nil {
		return 0, err
	}
	own := segs[len(segs)-1:] // the session's own entries
	if own[0].id != sess.ID {
		return 0, nil
	}
	seq, work, err := newestCompaction(ctx, tx, own)
	if err != nil || seq == 0 {
		return 0, err
	}
	// Candidates: own steps before the compaction, older than the cut-off,
	// not in its working set.
	rows, err := tx.QueryContext(ctx, `SELECT seq FROM entries
		WHERE tenant = ? AND session_id = ? AND kind = 'step' AND seq < ? AND created_at < ? ORDER BY seq`,
		sess.Tenant, sess.ID, seq, toNanos(cutoff))
	if err != nil {
		return 0, err
	}
	var cand []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return 0, err
		}
		if !work[n] {
			cand = append(cand, n)
		}
	}
	if err := rows.Close(); err != nil || len(cand) == 0 {
		return 0, err
	}

	// Keep what a branch that sees these entries still has in its
	// working set.
	deps, err := dependents(ctx, tx, sess.Tenant, sess.ID)
	if err != nil {
		return 0, err
	}
	for _, d := range deps {
		if d.cap < cand[0] {
			continue // sees none of the candidates
		}
		dsess, err := loadSession(ctx, tx, sess.Tenant, d.id, now, true)
		if err != nil {
			return 0, err
		}
		dsegs, err := segments(ctx, tx, dsess)
		if err != nil {
			return 0, err
		}
		dseq, dwork, err := newestCompaction(ctx, tx, dsegs)
		if err != nil {
			return 0, err
		}
		kept := cand[:0]
		for _, n := range cand {
			if n > d.cap || (n < dseq && !dwork[n]) {
				kept = append(kept, n)
			}
		}
		if cand = kept; len(cand) == 0 {
			return 0, nil
		}
	}

	arg, err := json.Marshal(cand)
	if err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, "DELETE FROM entries WHERE tenant = ? AND session_id = ? AND seq IN (SELECT value FROM json_each(?))", sess.Tenant, sess.ID, string(arg))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// newestCompaction returns the sequence number of the newest full
// compaction entry of the segments (0 if none; amendments do not change
// which steps the working set has) and the set of its Working list.
func newestCompaction(ctx context.Context, q querier, segs []segment) (int64, map[int64]bool, error) {
	seq, c, err := newestFull(ctx, q, segs, true)
	if err != nil || c == nil {
		return 0, nil, err
	}
	work := make(map[int64]bool, len(c.Working))
	for _, n := range c.Working {
		work[n] = true
	}
	return seq, work, nil
}

// dependent is a session whose visible log includes another's entries up
// to cap.
type dependent struct {
	id  string
	cap int64
}

// dependents returns every session that reads its history through the
// session of a tenant with this ID, directly or through other sessions
// (all in that tenant), with the highest sequence number of its entries
// it sees.
func dependents(ctx context.Context, q querier, tenant, id string) ([]dependent, error) {
	rows, err := q.QueryContext(ctx, `WITH RECURSIVE deps(id, cap) AS (
			SELECT id, base_seq FROM sessions WHERE tenant = ?1 AND base_id = ?2
			UNION ALL
			SELECT s.id, min(s.base_seq, d.cap) FROM sessions s JOIN deps d ON s.tenant = ?1 AND s.base_id = d.id
		)
		SELECT id, cap FROM deps`, tenant, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []dependent
	for rows.Next() {
		var d dependent
		if err := rows.Scan(&d.id, &d.cap); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
