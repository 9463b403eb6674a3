package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// Append implements store.Store. The request is validated before it is
// queued; then the store's committer (see groupcommit.go) runs it in a
// write transaction, possibly shared with other appends that were waiting
// at the same time, each inside a savepoint of its own: its entries are
// stored all or none, appenders of one session are serialized, and
// Append returns only after the transaction is committed, fsync included.
func (s *Store) Append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := store.ValidateAppend(req); err != nil {
		return nil, err
	}
	return s.commit(ctx, req, preEncode(req.Steps))
}

// appendTx is Append inside its transaction.
// encoded holds the steps' encodings by preEncode (or is nil).
func appendTx(ctx context.Context, tx querier, req store.AppendRequest, encoded [][]byte, now time.Time) (*store.AppendResponse, error) {
	sess, err := loadSession(ctx, tx, req.SessionID, now, false)
	if err != nil {
		return nil, err
	}
	segs, err := segments(ctx, tx, sess)
	if err != nil {
		return nil, err
	}

	// Steps already in the visible log are retries: they keep their entry.
	ids := make([]string, len(req.Steps))
	for i, st := range req.Steps {
		ids[i] = st.Info().ID
	}
	existing, err := findStepIDs(ctx, tx, segs, ids)
	if err != nil {
		return nil, err
	}
	// A request whose steps are all stored is a retry and stores
	// nothing. If it carries a compaction, the original request stored it
	// right after its last step: report that entry's seq.
	if len(req.Steps) > 0 && len(existing) == len(req.Steps) {
		resp := &store.AppendResponse{Seqs: make([]int64, len(ids)), LastSeq: sess.LastSeq}
		for i, id := range ids {
			resp.Seqs[i] = existing[id]
		}
		if req.Compaction != nil {
			if resp.CompactionSeq, err = compactionAfter(ctx, tx, segs, slices.Max(resp.Seqs)); err != nil {
				return nil, err
			}
		}
		return resp, nil
	}
	if req.ExpectedLastSeq != nil && *req.ExpectedLastSeq != sess.LastSeq {
		return nil, fmt.Errorf("sqlite: session %q: expected last seq %d, it is %d: %w",
			sess.ID, *req.ExpectedLastSeq, sess.LastSeq, agentmem.ErrConflict)
	}
	if req.Compaction != nil {
		if err := checkCompaction(ctx, tx, segs, req.Compaction, sess.LastSeq); err != nil {
			return nil, err
		}
	}

	// Number the new steps and encode them.
	next := sess.LastSeq
	seqs := make([]int64, len(req.Steps))
	type row struct {
		seq    int64
		kind   store.EntryKind
		stepID any
		body   []byte
	}
	var rows []row
	for i, st := range req.Steps {
		if seq, ok := existing[ids[i]]; ok {
			seqs[i] = seq
			continue
		}
		next++
		seqs[i] = next
		var pre []byte
		if i < len(encoded) {
			pre = encoded[i]
		}
		body, err := encodeNumbered(st, pre, next)
		if err != nil {
			return nil, fmt.Errorf("steps[%d]: %w", i, err)
		}
		rows = append(rows, row{seq: next, kind: store.StepEntry, stepID: ids[i], body: body})
	}

	resp := &store.AppendResponse{Seqs: seqs}
	if c := req.Compaction; c != nil {
		resolved, err := store.ResolveCompaction(c, seqs)
		if err != nil {
			return nil, err
		}
		body, err := store.EncodeCompaction(resolved)
		if err != nil {
			return nil, err
		}
		next++
		resp.CompactionSeq = next
		rows = append(rows, row{seq: next, kind: store.CompactionEntry, stepID: nil, body: body})
	}
	resp.LastSeq = next

	t := toNanos(now)
	for _, r := range rows {
		if _, err := tx.ExecContext(ctx, insertEntry, sess.ID, r.seq, string(r.kind), r.stepID, r.body, t); err != nil {
			return nil, err
		}
	}
	if _, err := tx.ExecContext(ctx, "UPDATE sessions SET last_seq = ?, updated_at = ? WHERE id = ?", next, t, sess.ID); err != nil {
		return nil, err
	}
	return resp, nil
}

// insertEntry inserts one entry.
const insertEntry = `INSERT INTO entries (session_id, seq, kind, step_id, body, created_at) VALUES (?, ?, ?, ?, ?, ?)`

// findStepIDs returns the sequence numbers of the steps of the visible log
// (segs) whose IDs are among ids.
func findStepIDs(ctx context.Context, q querier, segs []segment, ids []string) (map[string]int64, error) {
	found := make(map[string]int64, len(ids))
	if len(ids) == 0 {
		return found, nil
	}
	// The range of each segment is checked here, not in SQL: with it, the
	// planner would rather scan the session's log by seq than look the IDs
	// up in entries_by_step_id.
	var arg any
	const one = `SELECT step_id, seq FROM entries WHERE session_id = ? AND step_id = ?`
	const many = `SELECT step_id, seq FROM entries WHERE session_id = ? AND step_id IN (SELECT value FROM json_each(?))`
	query := one
	if len(ids) == 1 {
		arg = ids[0]
	} else {
		b, err := json.Marshal(ids)
		if err != nil {
			return nil, err
		}
		arg, query = string(b), many
	}
	for _, sg := range segs {
		rows, err := q.QueryContext(ctx, query, sg.id, arg)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			var seq int64
			if err := rows.Scan(&id, &seq); err != nil {
				rows.Close()
				return nil, err
			}
			if seq > sg.lo && seq <= sg.hi {
				found[id] = seq
			}
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// checkCompaction checks a compaction's references against the visible
// log as it is before the append (entries up to lastSeq): see
// store.CheckCompaction. Only the steps that have a replacement are
// decoded; for the others, existence is all that is checked.
func checkCompaction(ctx context.Context, q querier, segs []segment, c *store.CompactionRecord, lastSeq int64) error {
	var refs []int64
	for _, ref := range c.Working {
		if ref > 0 && ref <= lastSeq {
			refs = append(refs, ref)
		}
	}
	replaced := make(map[int64]bool, len(c.Replaced))
	for _, r := range c.Replaced {
		replaced[int64(r.Info().Number)] = true
	}
	found := make(map[int64]agentmem.Step, len(refs))
	if len(refs) > 0 {
		arg, err := json.Marshal(refs)
		if err != nil {
			return err
		}
		for _, sg := range segs {
			rows, err := q.QueryContext(ctx, `SELECT seq, body FROM entries
				WHERE session_id = ? AND kind = 'step' AND seq IN (SELECT value FROM json_each(?)) AND seq > ? AND seq <= ?`,
				sg.id, string(arg), sg.lo, sg.hi)
			if err != nil {
				return err
			}
			for rows.Next() {
				var seq int64
				var body sql.RawBytes
				if err := rows.Scan(&seq, &body); err != nil {
					rows.Close()
					return err
				}
				if !replaced[seq] {
					found[seq] = existsStub
					continue
				}
				st, err := store.DecodeStep(body)
				if err != nil {
					rows.Close()
					return fmt.Errorf("entry %d: %w", seq, err)
				}
				found[seq] = st
			}
			if err := rows.Close(); err != nil {
				return err
			}
		}
	}
	return store.CheckCompaction(c, func(seq int64) (agentmem.Step, bool) {
		st, ok := found[seq]
		return st, ok
	})
}

// existsStub stands, in checkCompaction's lookup, for a step that exists
// and has no replacement: store.CheckCompaction reads only the steps that
// have one.
var existsStub agentmem.Step = &agentmem.TaskStep{}

// compactionAfter returns seq+1 if the visible log's entry there is a
// compaction, else 0.
func compactionAfter(ctx context.Context, q querier, segs []segment, seq int64) (int64, error) {
	seq++
	for _, sg := range segs {
		if seq <= sg.lo || seq > sg.hi {
			continue
		}
		var kind string
		err := q.QueryRowContext(ctx, "SELECT kind FROM entries WHERE session_id = ? AND seq = ?", sg.id, seq).Scan(&kind)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && kind != string(store.CompactionEntry)) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		return seq, nil
	}
	return 0, nil
}
