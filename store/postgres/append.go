package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/pgdb"
	"github.com/agentmem/agentmem/store"
)

// Append implements store.Store. The request is validated before the
// transaction starts; everything else happens in one transaction that
// first locks the session's row (FOR NO KEY UPDATE: appenders of the
// session queue on it, while readers, branch creation and the foreign-key
// checks of the inserts do not), so the entries are stored all or none,
// numbered without gaps, and concurrent appenders of one session, in any
// number of processes, are serialized.
//
// The transaction is pipelined: BEGIN, the lock and the lookup of the
// request's step IDs go to the server together, and so do the insert and
// COMMIT, so an append to a session that is no branch costs two round
// trips (a remote database is where that counts).
func (s *Store) Append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := store.ValidateAppend(req); err != nil {
		return nil, err
	}
	for i, st := range req.Steps {
		if err := checkNoNUL(fmt.Sprintf("steps[%d].id", i), st.Info().ID); err != nil {
			return nil, err
		}
	}
	now := s.now()
	for attempt := 1; ; attempt++ {
		resp, err := s.appendOnce(ctx, req, now)
		if err == nil {
			return resp, nil
		}
		if attempt < maxAttempts && pgdb.Retryable(err) && ctx.Err() == nil {
			continue
		}
		return nil, s.dbErr("append", err)
	}
}

// appendOnce runs Append's transaction once.
func (s *Store) appendOnce(ctx context.Context, req store.AppendRequest, now time.Time) (*store.AppendResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	// A connection released inside a transaction (after an error that
	// left no chance to roll back) is closed by the pool, not reused.
	defer conn.Release()

	ids := make([]string, len(req.Steps))
	for i, st := range req.Steps {
		ids[i] = st.Info().ID
	}
	sess, own, err := lockForAppend(ctx, conn, req.Tenant, req.SessionID, ids, now)
	if err != nil {
		abort(conn)
		return nil, err
	}
	resp, ins, err := planAppend(ctx, conn, sess, req, ids, own)
	if err != nil {
		abort(conn)
		return nil, err
	}
	b := &pgx.Batch{}
	if len(ins.seqs) > 0 {
		// One statement inserts the entries and their changes of the
		// feed and moves last_seq.
		b.Queue(`WITH ins AS (
				INSERT INTO entries (tenant, session_id, seq, kind, step_id, body, created_at)
				SELECT $8, $1, u.seq, u.kind, u.step_id, u.body, $6
				FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bytea[]) AS u (seq, kind, step_id, body)
			), feed AS (
				`+feedAppendSQL+` SELECT 'append', $1, $8, u.seq FROM unnest($2::bigint[]) AS u (seq) ORDER BY u.seq
			)
			UPDATE sessions SET last_seq = $7, updated_at = $6 WHERE tenant = $8 AND id = $1`,
			sess.ID, ins.seqs, ins.kinds, ins.stepIDs, ins.bodies, now, resp.LastSeq, sess.Tenant)
	}
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	var tag string
	for range b.Len() {
		t, err := br.Exec()
		if err != nil {
			br.Close()
			abort(conn)
			return nil, err
		}
		tag = t.String()
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	if tag != "COMMIT" { // the server rolled back instead
		return nil, fmt.Errorf("commit: the server answered %q", tag)
	}
	return resp, nil
}

// lockForAppend begins the transaction, locks the session's row and
// finds which of ids are steps of the session's own log, in one round
// trip. The lookup runs after the lock is granted (the server runs the
// pipelined statements in order, each with a snapshot of its own), so it
// sees every append committed before. A missing or expired session is
// ErrNotFound.
func lockForAppend(ctx context.Context, conn *pgxpool.Conn, tenant, id string, ids []string, now time.Time) (*sessionRow, map[string]store.StoredStep, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SELECT "+sessionColumns+" FROM sessions WHERE tenant = $1 AND id = $2 FOR NO KEY UPDATE", tenant, id)
	if len(ids) > 0 {
		b.Queue("SELECT step_id, seq, body FROM entries WHERE tenant = $1 AND session_id = $2 AND step_id = ANY($3)", tenant, id, ids)
	}
	br := conn.SendBatch(ctx, b)
	sess, own, err := func() (*sessionRow, map[string]store.StoredStep, error) {
		if _, err := br.Exec(); err != nil {
			return nil, nil, err
		}
		sess, err := scanSession(br.QueryRow())
		if errors.Is(err, pgx.ErrNoRows) {
			err = notFound(id)
		}
		if err != nil {
			return nil, nil, err
		}
		own := make(map[string]store.StoredStep, len(ids))
		if len(ids) > 0 {
			rows, err := br.Query()
			if err != nil {
				return nil, nil, err
			}
			var (
				stepID string
				st     store.StoredStep
			)
			if _, err := pgx.ForEachRow(rows, []any{&stepID, &st.Seq, &st.Body}, func() error {
				own[stepID] = store.StoredStep{Seq: st.Seq, Body: slices.Clone(st.Body)}
				return nil
			}); err != nil {
				return nil, nil, err
			}
		}
		return sess, own, nil
	}()
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, nil, err
	}
	if sess.Expired(now) {
		return nil, nil, notFound(id)
	}
	return sess, own, nil
}

// abort rolls back the connection's transaction, if it is in one.
func abort(conn *pgxpool.Conn) {
	if conn.Conn().PgConn().TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
		// The pool closes a connection released in a transaction.
		conn.Conn().PgConn().Close(ctx) //nolint:errcheck // it is being thrown away
	}
}

// planAppend is Append under the session's lock: it finds the request's
// steps that are already in the visible log (own holds those of the
// session's own entries) and answers a retry or refuses a request reusing
// IDs (see store.CheckRetry), checks ExpectedLastSeq and the compaction,
// and numbers and encodes the new entries. It returns the response and
// the rows to insert (none for a retry).
func planAppend(ctx context.Context, q querier, sess *sessionRow, req store.AppendRequest, ids []string, own map[string]store.StoredStep) (*store.AppendResponse, *insertBatch, error) {
	segs, err := segments(ctx, q, sess)
	if err != nil {
		return nil, nil, err
	}
	// Steps already in the visible log: a request whose steps are all
	// stored (the same steps) is a retry and stores nothing; a request
	// reusing IDs otherwise is refused.
	existing := own
	if len(segs) > 1 && len(existing) < len(ids) {
		inherited, err := findStepIDs(ctx, q, segs[:len(segs)-1], ids)
		if err != nil {
			return nil, nil, err
		}
		for id, st := range inherited {
			existing[id] = st
		}
	}
	ins := &insertBatch{}
	if len(existing) > 0 {
		resp, err := retried(ctx, q, segs, req, ids, existing, sess.LastSeq)
		if resp != nil || err != nil {
			return resp, ins, err
		}
	}
	if req.ExpectedLastSeq != nil && *req.ExpectedLastSeq != sess.LastSeq {
		return nil, nil, fmt.Errorf("postgres: session %q: expected last seq %d, it is %d: %w",
			sess.ID, *req.ExpectedLastSeq, sess.LastSeq, agentmem.ErrConflict)
	}

	// Number the new steps and encode them.
	next := sess.LastSeq
	seqs := make([]int64, len(req.Steps))
	for i, st := range req.Steps {
		next++
		seqs[i] = next
		body, err := store.EncodeStep(numbered(st, next))
		if err != nil {
			return nil, nil, fmt.Errorf("steps[%d]: %w", i, err)
		}
		ins.add(next, store.StepEntry, &ids[i], body)
	}

	resp := &store.AppendResponse{Seqs: seqs}
	if c := req.Compaction; c != nil {
		if err := checkCompaction(ctx, q, segs, c, sess.LastSeq); err != nil {
			return nil, nil, err
		}
		resolved, err := store.ResolveCompaction(c, seqs)
		if err != nil {
			return nil, nil, err
		}
		if !c.Amend { // an amendment keeps the working set's steps
			ws, err := workingSteps(ctx, q, segs)
			if err != nil {
				return nil, nil, err
			}
			for i, st := range req.Steps {
				ws = append(ws, store.WorkingStep{Seq: seqs[i], Kind: st.Kind()})
			}
			if err := store.CheckPinned(resolved, ws); err != nil {
				return nil, nil, err
			}
		}
		body, err := store.EncodeCompaction(resolved)
		if err != nil {
			return nil, nil, err
		}
		next++
		resp.CompactionSeq = next
		ins.add(next, store.CompactionEntry, nil, body)
	}
	resp.LastSeq = next
	return resp, ins, nil
}

// insertBatch collects the rows of entries one statement inserts.
type insertBatch struct {
	seqs    []int64
	kinds   []string
	stepIDs []*string
	bodies  [][]byte
}

func (b *insertBatch) add(seq int64, kind store.EntryKind, stepID *string, body []byte) {
	b.seqs = append(b.seqs, seq)
	b.kinds = append(b.kinds, string(kind))
	b.stepIDs = append(b.stepIDs, stepID)
	b.bodies = append(b.bodies, body)
}

// retried handles a request some of whose steps are stored (existing, by
// ID): see store.CheckRetry. For a retry it returns the response (the
// stored seqs, and the seq of the compaction stored after them if the
// request has one, checked with store.CheckRetriedCompaction); for a
// request that reuses IDs otherwise, the error. A retry stores nothing
// and succeeds whatever its ExpectedLastSeq says.
func retried(ctx context.Context, q querier, segs []segment, req store.AppendRequest, ids []string, existing map[string]store.StoredStep, lastSeq int64) (*store.AppendResponse, error) {
	seqs, retry, err := store.CheckStoredRetry(req.Steps, ids, existing)
	if err != nil || !retry {
		return nil, err
	}
	resp := &store.AppendResponse{Seqs: seqs, LastSeq: lastSeq}
	if req.Compaction == nil {
		return resp, nil
	}
	after := slices.Max(seqs) + 1
	var rec *store.CompactionRecord
	for _, sg := range segs {
		if after <= sg.lo || after > sg.hi {
			continue
		}
		var (
			kind string
			body []byte
		)
		err := q.QueryRow(ctx, "SELECT kind, body FROM entries WHERE tenant = $1 AND session_id = $2 AND seq = $3", sg.tenant, sg.id, after).Scan(&kind, &body)
		if errors.Is(err, pgx.ErrNoRows) {
			break
		}
		if err != nil {
			return nil, err
		}
		if kind == string(store.CompactionEntry) {
			if rec, err = store.DecodeCompaction(body); err != nil {
				return nil, fmt.Errorf("stored entry %d does not decode: %v", after, err)
			}
		}
		break
	}
	if err := store.CheckRetriedCompaction(req.Compaction, seqs, after, rec); err != nil {
		return nil, err
	}
	resp.CompactionSeq = after
	return resp, nil
}

// numbered returns st numbered n (see store.WithNumber), st itself if it
// already is.
func numbered(st agentmem.Step, n int64) agentmem.Step {
	if int64(st.Info().Number) == n {
		return st
	}
	return store.WithNumber(st, n)
}
