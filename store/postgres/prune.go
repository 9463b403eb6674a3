package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// Prune implements store.Store. It deletes each expired session as Delete
// does (its branches keep their history), then, with CoveredBefore, the
// step entries older than it that no session's working set names. Each
// session is pruned in a transaction of its own, so a large prune neither
// holds locks for long nor grows one huge transaction; a Prune that fails
// half way has deleted what it reports in its error's place (nothing that
// is still needed).
func (s *Store) Prune(ctx context.Context, req store.PruneRequest) (*store.PruneResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	now := req.Now
	if now.IsZero() {
		now = s.now()
	}
	resp := &store.PruneResponse{}

	expired, err := s.keys(ctx, `SELECT tenant, id FROM sessions
		WHERE retention <> 'persistent' AND expires_at <= $1 ORDER BY tenant, id`, now)
	if err != nil {
		return nil, s.dbErr("prune", err)
	}
	for _, k := range expired {
		var deleted *store.Session
		err := s.write(ctx, "prune", func(tx pgx.Tx) error {
			deleted = nil
			r, err := loadSession(ctx, tx, k.Tenant, k.ID, "FOR UPDATE", time.Time{}, true)
			if errors.Is(err, agentmem.ErrNotFound) {
				return nil // deleted meanwhile
			}
			if err != nil {
				return err
			}
			if !r.Expired(now) {
				return nil
			}
			deleted = &r.Session
			return deleteSession(ctx, tx, r)
		})
		if err != nil {
			return nil, err
		}
		if deleted != nil {
			resp.SessionsDeleted++
			resp.Deleted = append(resp.Deleted, *deleted)
		}
	}
	if req.CoveredBefore.IsZero() {
		return resp, nil
	}

	// Only a session that owns a compaction entry can own covered steps:
	// everything after a compaction is in the working set.
	compacted, err := s.keys(ctx, `SELECT tenant, id FROM sessions s WHERE EXISTS
		(SELECT 1 FROM entries e WHERE e.tenant = s.tenant AND e.session_id = s.id AND e.kind = 'compaction') ORDER BY tenant, id`)
	if err != nil {
		return nil, s.dbErr("prune", err)
	}
	for _, k := range compacted {
		var n int64
		err := s.write(ctx, "prune", func(tx pgx.Tx) error {
			var err error
			n, err = pruneCovered(ctx, tx, k, req.CoveredBefore)
			return err
		})
		if err != nil {
			return nil, err
		}
		resp.EntriesDeleted += int(n)
	}
	return resp, nil
}

// keys runs a query for the keys of sessions (tenant, id).
func (s *Store) keys(ctx context.Context, sql string, args ...any) ([]store.Key, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Key, error) {
		var k store.Key
		err := row.Scan(&k.Tenant, &k.ID)
		return k, err
	})
}

// pruneCovered deletes the step entries session id owns that are older
// than cutoff and in no working set: not in its own (they come before its
// newest compaction and the compaction does not name them), nor in that of
// any session that reads its history through this one (a branch forked
// before the compaction, say, still has them in its working set). The
// session and those branches are locked (FOR NO KEY UPDATE, in the order
// Delete locks them) so that no compaction naming a step can be appended
// while it goes.
func pruneCovered(ctx context.Context, tx pgx.Tx, k store.Key, cutoff time.Time) (int64, error) {
	o, err := loadSession(ctx, tx, k.Tenant, k.ID, "FOR NO KEY UPDATE", time.Time{}, true)
	if errors.Is(err, agentmem.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	segs, err := segments(ctx, tx, o)
	if err != nil {
		return 0, err
	}
	comp, err := newestCompaction(ctx, tx, segs)
	if err != nil {
		return 0, err
	}
	if comp == nil || comp.Seq <= o.baseSeq {
		return 0, nil // no compaction of its own: all of its steps are working
	}
	// Kept: the steps some working set names, and the ranges some working
	// set holds whole (the steps after a compaction, or all of them).
	keep := ownSeqs(comp.Compaction.Working, o.baseSeq, comp.Seq)
	var keepLo, keepHi []int64

	rows, err := tx.Query(ctx, `WITH RECURSIVE d (id, upto, depth) AS (
			SELECT id, base_seq, 1 FROM sessions WHERE tenant = $4 AND base_id = $1
			UNION ALL
			SELECT s.id, LEAST(d.upto, s.base_seq), d.depth + 1
			FROM d JOIN sessions s ON s.tenant = $4 AND s.base_id = d.id
			WHERE d.depth <= $3
		)
		SELECT id, upto FROM d WHERE upto > $2 ORDER BY depth, id`, o.ID, o.baseSeq, maxChain, o.Tenant)
	if err != nil {
		return 0, err
	}
	type dependent struct {
		id   string
		upto int64
	}
	deps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (dependent, error) {
		var d dependent
		err := row.Scan(&d.id, &d.upto)
		return d, err
	})
	if err != nil {
		return 0, err
	}
	for _, d := range deps {
		r, err := loadSession(ctx, tx, o.Tenant, d.id, "FOR NO KEY UPDATE", time.Time{}, true)
		if errors.Is(err, agentmem.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		dsegs, err := segments(ctx, tx, r)
		if err != nil {
			return 0, err
		}
		dc, err := newestCompaction(ctx, tx, dsegs)
		if err != nil {
			return 0, err
		}
		// d sees this session's own entries in (o.baseSeq, d.upto].
		if dc == nil {
			keepLo, keepHi = append(keepLo, o.baseSeq), append(keepHi, d.upto)
			continue
		}
		keep = append(keep, ownSeqs(dc.Compaction.Working, o.baseSeq, d.upto+1)...)
		if dc.Seq < d.upto {
			keepLo, keepHi = append(keepLo, max(dc.Seq, o.baseSeq)), append(keepHi, d.upto)
		}
	}
	tag, err := tx.Exec(ctx, `DELETE FROM entries
		WHERE tenant = $8 AND session_id = $1 AND kind = 'step' AND created_at < $2 AND seq > $3 AND seq < $4
		AND seq <> ALL($5::bigint[])
		AND NOT EXISTS (SELECT 1 FROM unnest($6::bigint[], $7::bigint[]) AS k (lo, hi) WHERE seq > k.lo AND seq <= k.hi)`,
		o.ID, cutoff, o.baseSeq, comp.Seq, keep, keepLo, keepHi, o.Tenant)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// ownSeqs returns the sequence numbers of working that fall in (lo, hi).
func ownSeqs(working []int64, lo, hi int64) []int64 {
	out := []int64{}
	for _, seq := range working {
		if seq > lo && seq < hi {
			out = append(out, seq)
		}
	}
	return out
}
