package sqlstore

import (
	"context"
	"errors"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/store"
)

// Prune implements store.Driver. It deletes each expired session as Delete
// does (its branches keep their history), then, with CoveredBefore, the
// step entries older than it that no session's working set names. Each
// session is pruned in a transaction of its own. So a large prune neither
// holds locks (SQLite's write lock) for long nor grows one huge
// transaction, and appends interleave with it. A Prune that fails half way
// has deleted what it reports in its error's place, and nothing that is
// still needed.
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

	expired, err := s.keys(ctx, `SELECT tenant, id FROM sessions
		WHERE expires_at <= $1 AND retention <> 'persistent' ORDER BY expires_at, tenant, id`, s.d.time(now))
	if err != nil {
		return nil, s.err("prune", err)
	}
	for _, k := range expired {
		var deleted *store.Session
		err := s.write(ctx, "prune", func(tx sqldb.Tx) error {
			deleted = nil
			r, err := keysOnly(s.loadSession(ctx, tx, k.Tenant, k.ID, s.d.forUpdate, time.Time{}, true))
			if errors.Is(err, agentmem.ErrNotFound) {
				return nil // deleted meanwhile
			}
			if err != nil {
				return err
			}
			if !r.Expired(now) {
				return nil // its expiry changed meanwhile
			}
			deleted = &r.Session
			return s.deleteSession(ctx, tx, r)
		})
		if err != nil {
			return resp, err
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
	// everything after a compaction is in the working set, and the steps
	// a session owns come after anything it inherits.
	compacted, err := s.keys(ctx, `SELECT DISTINCT tenant, session_id FROM entries WHERE kind = 'compaction' ORDER BY tenant, session_id`)
	if err != nil {
		return resp, s.err("prune", err)
	}
	for _, k := range compacted {
		var n int64
		err := s.write(ctx, "prune", func(tx sqldb.Tx) error {
			var err error
			n, err = s.pruneCovered(ctx, tx, k, req.CoveredBefore)
			return err
		})
		if err != nil {
			return resp, err
		}
		resp.EntriesDeleted += int(n)
	}
	return resp, nil
}

// keys runs a query for the keys of sessions (tenant, id).
func (s *Store) keys(ctx context.Context, query string, args ...any) ([]store.Key, error) {
	var keys []store.Key
	err := queryRows(ctx, s.db.Reader(), query, args, func(rows sqldb.Rows) error {
		var k store.Key
		err := rows.Scan(&k.Tenant, &k.ID)
		keys = append(keys, k)
		return err
	})
	return keys, err
}

// pruneCovered deletes the step entries a session owns that are older than
// cutoff and in no working set, and returns how many it deleted. Such a
// step is not in the session's own working set: it comes before the newest
// compaction, which does not name it. Nor is it in that of any session that
// reads its history through this one, such as a branch forked before the
// compaction. On PostgreSQL the session and those
// branches are locked (FOR NO KEY UPDATE, in the order Delete locks them)
// so that no compaction naming a step can be appended while it goes.
func (s *Store) pruneCovered(ctx context.Context, tx sqldb.Tx, k store.Key, cutoff time.Time) (int64, error) {
	o, compSeq, work, err := s.lockedCompaction(ctx, tx, k.Tenant, k.ID)
	if o == nil || err != nil {
		return 0, err // deleted meanwhile, or failed
	}
	if compSeq <= o.baseSeq {
		return 0, nil // no compaction of its own: all of its steps are working
	}
	// Candidates: own steps before the compaction, older than the
	// cut-off, not in its working set.
	var cand []int64
	err = queryRows(ctx, tx, `SELECT seq FROM entries
		WHERE tenant = $1 AND session_id = $2 AND kind = 'step' AND seq > $3 AND seq < $4 AND created_at < $5 ORDER BY seq`,
		[]any{o.Tenant, o.ID, o.baseSeq, compSeq, s.d.time(cutoff)}, func(rows sqldb.Rows) error {
			var n int64
			if err := rows.Scan(&n); err != nil {
				return err
			}
			if !work[n] {
				cand = append(cand, n)
			}
			return nil
		})
	if err != nil || len(cand) == 0 {
		return 0, err
	}

	// Keep what a session that sees these entries still has in its
	// working set.
	deps, err := s.dependents(ctx, tx, o)
	if err != nil {
		return 0, err
	}
	for _, d := range deps {
		if d.upto < cand[0] {
			continue // sees none of the candidates
		}
		r, dseq, dwork, err := s.lockedCompaction(ctx, tx, o.Tenant, d.id)
		if err != nil {
			return 0, err
		}
		if r == nil {
			continue // deleted meanwhile
		}
		// d sees this session's own entries up to d.upto: of those, its
		// working set has the ones its compaction names and all after it.
		kept := cand[:0]
		for _, n := range cand {
			if n > d.upto || (n < dseq && !dwork[n]) {
				kept = append(kept, n)
			}
		}
		if cand = kept; len(cand) == 0 {
			return 0, nil
		}
	}
	return tx.Exec(ctx, `DELETE FROM entries WHERE tenant = $1 AND session_id = $2 AND `+s.d.in("seq", 3),
		o.Tenant, o.ID, s.d.ints(cand))
}

// lockedCompaction loads and locks a session (FOR NO KEY UPDATE on
// PostgreSQL) and finds the newest full compaction of its visible log:
// its sequence number (0 if there is none) and the set of its Working
// list. A session that is gone is nil, with no error.
func (s *Store) lockedCompaction(ctx context.Context, tx sqldb.Tx, tenant, id string) (*SessionRow, int64, map[int64]bool, error) {
	r, err := keysOnly(s.loadSession(ctx, tx, tenant, id, s.d.forNoKeyUpdate, time.Time{}, true))
	if errors.Is(err, agentmem.ErrNotFound) {
		return nil, 0, nil, nil
	}
	if err != nil {
		return nil, 0, nil, err
	}
	segs, err := segments(ctx, tx, r)
	if err != nil {
		return nil, 0, nil, err
	}
	seq, comp, err := s.newestFull(ctx, tx, segs, true)
	if err != nil || comp == nil {
		return r, 0, nil, err
	}
	work := make(map[int64]bool, len(comp.Working))
	for _, n := range comp.Working {
		work[n] = true
	}
	return r, seq, work, nil
}

// dependent is a session whose visible log includes another's entries up
// to upto.
type dependent struct {
	id   string
	upto int64
}

// dependents returns every session that reads its history through o,
// directly or through other sessions (all in o's tenant), and sees some
// of o's own entries, with the highest sequence number of them it sees,
// nearest first (in the order Delete locks them).
func (s *Store) dependents(ctx context.Context, q sqldb.Querier, o *SessionRow) ([]dependent, error) {
	var deps []dependent
	err := queryRows(ctx, q, `WITH RECURSIVE d (id, upto, depth) AS (
			SELECT id, base_seq, 1 FROM sessions WHERE tenant = $4 AND base_id = $1
			UNION ALL
			SELECT s.id, `+s.d.least+`(d.upto, s.base_seq), d.depth + 1
			FROM d JOIN sessions s ON s.tenant = $4 AND s.base_id = d.id
			WHERE d.depth <= $3
		)
		SELECT id, upto FROM d WHERE upto > $2 ORDER BY depth, id`,
		[]any{o.ID, o.baseSeq, maxChain, o.Tenant}, func(rows sqldb.Rows) error {
			var d dependent
			err := rows.Scan(&d.id, &d.upto)
			deps = append(deps, d)
			return err
		})
	return deps, err
}
