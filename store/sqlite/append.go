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
	encoded, err := store.ValidateAppendEncoded(req)
	if err != nil {
		return nil, err
	}
	return s.commit(ctx, req, encoded)
}

// appendTx is Append inside its transaction.
// encoded holds the steps' encodings by store.ValidateAppendEncoded (or
// is nil).
func appendTx(ctx context.Context, tx querier, req store.AppendRequest, encoded [][]byte, now time.Time) (*store.AppendResponse, error) {
	sess, err := loadSession(ctx, tx, req.Tenant, req.SessionID, now, false)
	if err != nil {
		return nil, err
	}
	segs, err := segments(ctx, tx, sess)
	if err != nil {
		return nil, err
	}

	// Steps already in the visible log: a request whose steps are all
	// stored (the same steps) is a retry and stores nothing; a request
	// reusing IDs otherwise is refused.
	ids := make([]string, len(req.Steps))
	for i, st := range req.Steps {
		ids[i] = st.Info().ID
	}
	existing, err := findStepIDs(ctx, tx, segs, ids)
	if err != nil {
		return nil, err
	}
	if len(existing) > 0 {
		resp, err := retried(ctx, tx, segs, req, ids, existing, sess.LastSeq)
		if resp != nil || err != nil {
			return resp, err
		}
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
		if !c.Amend { // an amendment keeps the working set's steps
			ws, err := workingSteps(ctx, tx, segs)
			if err != nil {
				return nil, err
			}
			for i, st := range req.Steps {
				ws = append(ws, store.WorkingStep{Seq: seqs[i], Kind: st.Kind()})
			}
			if err := store.CheckPinned(resolved, ws); err != nil {
				return nil, err
			}
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
		if _, err := tx.ExecContext(ctx, insertEntry, sess.Tenant, sess.ID, r.seq, string(r.kind), r.stepID, r.body, t); err != nil {
			return nil, err
		}
	}
	if _, err := tx.ExecContext(ctx, "UPDATE sessions SET last_seq = ?, updated_at = ? WHERE tenant = ? AND id = ?", next, t, sess.Tenant, sess.ID); err != nil {
		return nil, err
	}
	return resp, nil
}

// insertEntry inserts one entry.
const insertEntry = `INSERT INTO entries (tenant, session_id, seq, kind, step_id, body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`

// findStepIDs returns the steps of the visible log (segs) whose IDs are
// among ids, by ID. An append of new steps finds none, and so reads no
// body.
func findStepIDs(ctx context.Context, q querier, segs []segment, ids []string) (map[string]store.StoredStep, error) {
	found := make(map[string]store.StoredStep, len(ids))
	if len(ids) == 0 {
		return found, nil
	}
	// The range of each segment is checked here, not in SQL: with it, the
	// planner would rather scan the session's log by seq than look the IDs
	// up in entries_by_step_id.
	var arg any
	const one = `SELECT step_id, seq, body FROM entries WHERE tenant = ? AND session_id = ? AND step_id = ?`
	const many = `SELECT step_id, seq, body FROM entries WHERE tenant = ? AND session_id = ? AND step_id IN (SELECT value FROM json_each(?))`
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
		rows, err := q.QueryContext(ctx, query, sg.tenant, sg.id, arg)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			var st store.StoredStep
			if err := rows.Scan(&id, &st.Seq, &st.Body); err != nil {
				rows.Close()
				return nil, err
			}
			if st.Seq > sg.lo && st.Seq <= sg.hi {
				found[id] = st
			}
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// retried handles a request some of whose steps are stored (existing, by
// ID): see store.CheckRetry. For a retry it returns the response (the
// stored seqs, and the seq of the compaction stored after them if the
// request has one, checked with store.CheckRetriedCompaction); for a
// request that reuses IDs otherwise, the error. A nil response and error
// cannot happen with existing non-empty, but would mean a new append.
func retried(ctx context.Context, q querier, segs []segment, req store.AppendRequest, ids []string, existing map[string]store.StoredStep, lastSeq int64) (*store.AppendResponse, error) {
	seqs, retry, err := store.CheckStoredRetry(req.Steps, ids, existing)
	if err != nil || !retry {
		return nil, err
	}
	resp := &store.AppendResponse{Seqs: seqs, LastSeq: lastSeq}
	if req.Compaction != nil {
		after := slices.Max(seqs) + 1
		rec, err := compactionAt(ctx, q, segs, after)
		if err != nil {
			return nil, err
		}
		if err := store.CheckRetriedCompaction(req.Compaction, seqs, after, rec); err != nil {
			return nil, err
		}
		resp.CompactionSeq = after
	}
	return resp, nil
}

// checkCompaction checks a compaction's references against the visible
// log as it is before the append (entries up to lastSeq): see
// store.CheckCompaction. Only the steps that have a replacement are
// decoded; for the others, existence is all that is checked. An
// amendment's references are its copies' steps, which must be in the
// working set: its cost is that of its copies, not of the working set.
func checkCompaction(ctx context.Context, q querier, segs []segment, c *store.CompactionRecord, lastSeq int64) error {
	var refs []int64
	if c.Amend {
		for _, r := range c.Replaced {
			if n := int64(r.Info().Number); n <= lastSeq {
				refs = append(refs, n)
			}
		}
	}
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
				WHERE tenant = ? AND session_id = ? AND kind = 'step' AND seq IN (SELECT value FROM json_each(?)) AND seq > ? AND seq <= ?`,
				sg.tenant, sg.id, string(arg), sg.lo, sg.hi)
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
	member := func(int64) bool { return true }
	if c.Amend {
		var err error
		if member, err = workingSetMember(ctx, q, segs, refs); err != nil {
			return err
		}
	}
	return store.CheckCompaction(c, func(seq int64) (agentmem.Step, bool) {
		st, ok := found[seq]
		return st, ok && member(seq)
	})
}

// workingSetMember returns store.InWorkingSet for the visible log, to be
// asked about seqs: it finds the newest full compaction, and reads its
// record only if one of seqs is not after it.
func workingSetMember(ctx context.Context, q querier, segs []segment, seqs []int64) (func(int64) bool, error) {
	fullSeq, _, err := newestFull(ctx, q, segs, false)
	if err != nil {
		return nil, err
	}
	var full *store.CompactionRecord
	if slices.ContainsFunc(seqs, func(n int64) bool { return n <= fullSeq }) {
		if full, err = compactionAt(ctx, q, segs, fullSeq); err != nil {
			return nil, err
		}
	}
	return func(seq int64) bool { return store.InWorkingSet(seq, fullSeq, full) }, nil
}

// existsStub stands, in checkCompaction's lookup, for a step that exists
// and has no replacement: store.CheckCompaction reads only the steps that
// have one.
var existsStub agentmem.Step = &agentmem.TaskStep{}

// compactionAt returns the record of the visible log's entry at seq if it
// is a compaction, else nil.
func compactionAt(ctx context.Context, q querier, segs []segment, seq int64) (*store.CompactionRecord, error) {
	for _, sg := range segs {
		if seq <= sg.lo || seq > sg.hi {
			continue
		}
		var kind string
		var body []byte
		err := q.QueryRowContext(ctx, "SELECT kind, body FROM entries WHERE tenant = ? AND session_id = ? AND seq = ?", sg.tenant, sg.id, seq).Scan(&kind, &body)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && kind != string(store.CompactionEntry)) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		rec, err := store.DecodeCompaction(body)
		if err != nil {
			return nil, fmt.Errorf("stored entry %d does not decode: %v", seq, err)
		}
		return rec, nil
	}
	return nil, nil
}

// workingSteps returns the sequence numbers and kinds of the steps of the
// working set of the visible log, in order (see store.WorkingSet), for
// store.CheckPinned. Of each step it reads only the start of its
// encoding, where its type is (store.EncodedKind).
func workingSteps(ctx context.Context, q querier, segs []segment) ([]store.WorkingStep, error) {
	var out []store.WorkingStep
	after, comp, err := newestFull(ctx, q, segs, true)
	if err != nil {
		return nil, err
	}
	if comp != nil && len(comp.Working) > 0 {
		arg, err := json.Marshal(comp.Working)
		if err != nil {
			return nil, err
		}
		kinds := make(map[int64]agentmem.StepKind, len(comp.Working))
		for _, sg := range segs {
			if err := scanKinds(ctx, q, `SELECT seq, `+kindPrefix+` FROM entries
				WHERE tenant = ? AND session_id = ? AND kind = 'step' AND seq IN (SELECT value FROM json_each(?)) AND seq > ? AND seq <= ?`,
				func(seq int64, k agentmem.StepKind) { kinds[seq] = k }, sg.tenant, sg.id, string(arg), sg.lo, min(sg.hi, after)); err != nil {
				return nil, err
			}
		}
		for _, seq := range comp.Working {
			if k, ok := kinds[seq]; ok {
				out = append(out, store.WorkingStep{Seq: seq, Kind: k})
			}
		}
	}
	for _, sg := range segs {
		if sg.hi <= after {
			continue
		}
		if err := scanKinds(ctx, q, `SELECT seq, `+kindPrefix+` FROM entries
			WHERE tenant = ? AND session_id = ? AND kind = 'step' AND seq > ? AND seq <= ? ORDER BY seq`,
			func(seq int64, k agentmem.StepKind) { out = append(out, store.WorkingStep{Seq: seq, Kind: k}) },
			sg.tenant, sg.id, max(sg.lo, after), sg.hi); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// kindPrefix selects as much of a step's body as store.EncodedKind needs:
// its first store.KindPrefixBytes bytes when it starts with its type (as
// store.EncodeStep writes it), else all of it.
var kindPrefix = fmt.Sprintf(`CASE WHEN substr(body, 1, 9) = x'7b2274797065223a22' THEN substr(body, 1, %d) ELSE body END`, store.KindPrefixBytes)

// scanKinds runs a query for (seq, kindPrefix) rows and calls fn with each
// step's sequence number and kind.
func scanKinds(ctx context.Context, q querier, query string, fn func(int64, agentmem.StepKind), args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var b []byte
		if err := rows.Scan(&seq, &b); err != nil {
			return err
		}
		k, err := store.EncodedKind(b)
		if err != nil {
			return fmt.Errorf("stored entry %d: %v", seq, err)
		}
		fn(seq, k)
	}
	return rows.Err()
}
