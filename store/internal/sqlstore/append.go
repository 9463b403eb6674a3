package sqlstore

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/store"
)

// EntryRow is an entry to insert into a session's log.
type EntryRow struct {
	Seq  int64
	Kind store.EntryKind
	// StepID is the step's ID, "" (NULL) for a compaction.
	StepID string
	// Body is the entry's encoding (store.EncodeStep, EncodeCompaction).
	Body []byte
	// Time is when the entry was appended: set for an import, whose
	// entries keep their times (an append's entries all take the time of
	// the append).
	Time time.Time
}

// stepIDArg returns the row's StepID as a query argument (nil for NULL).
func (r EntryRow) stepIDArg() any { return nullString(r.StepID) }

// ValidateAppend checks an append before it waits for the database: the
// store is open, the request valid (store.ValidateAppendEncoded) and its
// step IDs storable (CheckText). It returns the steps' encodings, for
// AppendTx or PlanAppend.
func ValidateAppend(s *Store, req store.AppendRequest) ([][]byte, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	encoded, err := store.ValidateAppendEncoded(req)
	if err != nil {
		return nil, err
	}
	for i, st := range req.Steps {
		if id := st.Info().ID; s.d.noNUL && strings.IndexByte(id, 0) >= 0 {
			return nil, s.checkText(fmt.Sprintf("steps[%d].id", i), id)
		}
	}
	return encoded, nil
}

// LockForAppendSQL is the query that reads the session an append goes to
// under lock (FOR NO KEY UPDATE on PostgreSQL: the appenders of the
// session queue on its row, while readers, branch creation and the
// foreign-key checks of the inserts do not): $1 the tenant, $2 the ID,
// its row scanned by ScanSession.
func LockForAppendSQL(s *Store) string { return selectSession + s.d.forNoKeyUpdate }

// AppendTx is an append inside a write transaction: it loads and locks
// the session, plans the append (PlanAppend), inserts the new entries and
// moves the session's last_seq. encoded holds the steps' encodings by
// store.ValidateAppendEncoded, or is nil. It changes nothing when it
// fails, but for statements it ran, which the caller rolls back.
func AppendTx(ctx context.Context, s *Store, q sqldb.Querier, req store.AppendRequest, encoded [][]byte, now time.Time) (*store.AppendResponse, error) {
	sess, err := s.loadSession(ctx, q, req.Tenant, req.SessionID, s.d.forNoKeyUpdate, now, false)
	if err != nil {
		return nil, err
	}
	resp, rows, err := PlanAppend(ctx, s, q, sess, req, encoded, nil)
	if err != nil || len(rows) == 0 {
		return resp, err
	}
	tenant, id, at := any(sess.Tenant), any(sess.ID), s.d.time(now) // boxed once
	for _, r := range rows {
		if _, err := q.Exec(ctx, insertEntry, tenant, id, r.Seq, string(r.Kind), r.stepIDArg(), r.Body, at); err != nil {
			return nil, err
		}
	}
	if k := req.Idempotency; k != nil {
		if _, err := q.Exec(ctx, InsertKeySQL, append([]any{tenant, id}, KeyArgs(k, resp)...)...); err != nil {
			return nil, err
		}
	}
	if s.d.feedAppends != "" {
		seqs := make([]int64, len(rows))
		for i, r := range rows {
			seqs[i] = r.Seq
		}
		if err := s.recordAppends(ctx, q, sess.Tenant, sess.ID, seqs); err != nil {
			return nil, err
		}
	}
	if _, err := q.Exec(ctx, "UPDATE sessions SET last_seq = $1, updated_at = $2 WHERE tenant = $3 AND id = $4",
		resp.LastSeq, at, tenant, id); err != nil {
		return nil, err
	}
	return resp, nil
}

// insertEntry inserts one entry.
const insertEntry = `INSERT INTO entries (tenant, session_id, seq, kind, step_id, body, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`

// InsertKeySQL records an append's idempotency key ($1 the tenant, $2 the
// session, the rest KeyArgs), in the append's transaction.
const InsertKeySQL = `INSERT INTO idempotency_keys (tenant, session_id, request_key, fingerprint, seq, last_seq, steps) VALUES ($1, $2, $3, $4, $5, $6, $7)`

// KeyArgs are the arguments of InsertKeySQL after the tenant and the
// session for an append with key k that stored what resp reports: the
// key, the fingerprint, the first and last entries' seqs and the number
// of steps (store.NewKeyRecord).
func KeyArgs(k *store.Idempotency, resp *store.AppendResponse) []any {
	r := store.NewKeyRecord(k.Fingerprint, resp)
	return []any{k.Key, r.Fingerprint, r.Seq, r.LastSeq, int64(r.Steps)}
}

// Own is what PostgreSQL's append finds of a request in the session's own
// log in the round trip that takes the lock (see PlanAppend).
type Own struct {
	// Steps are the request's steps found, by ID.
	Steps map[string]store.StoredStep
	// Key is the record of the request's idempotency key, if the session
	// has one of its own.
	Key *store.KeyRecord
}

// PlanAppend is an append under the session's lock, up to what it
// writes: it looks the request's idempotency key up (store.CheckKey),
// finds the request's steps that are already in the visible log and
// answers a retry or refuses a request reusing IDs (see
// store.CheckRetry), checks ExpectedLastSeq and the compaction (its
// references, and its pinned steps: store.CheckPinned), and numbers and
// encodes the new entries. It returns the response and the rows to
// insert (none for a retry or a request that only checks its key); when
// there are rows and the request has a key, the caller records it too
// (InsertKeySQL), in the same transaction.
//
// own, when not nil, holds what the request has in the session's own log
// (PostgreSQL looks it up in the round trip that takes the lock);
// PlanAppend then looks only in the inherited log. encoded holds the
// steps' encodings by store.ValidateAppendEncoded, or is nil.
func PlanAppend(ctx context.Context, s *Store, q sqldb.Querier, sess *SessionRow, req store.AppendRequest, encoded [][]byte, own *Own) (*store.AppendResponse, []EntryRow, error) {
	segs, err := segments(ctx, q, sess)
	if err != nil {
		return nil, nil, err
	}
	if k := req.Idempotency; k != nil {
		var rec *store.KeyRecord
		switch {
		case own == nil:
			rec, err = s.findKey(ctx, q, segs, k.Key)
		case own.Key != nil:
			rec = own.Key
		case len(segs) > 1:
			rec, err = s.findKey(ctx, q, segs[:len(segs)-1], k.Key)
		}
		if err != nil {
			return nil, nil, err
		}
		resp, err := store.CheckKey(req, rec, sess.LastSeq)
		if err != nil || resp != nil {
			return resp, nil, err
		}
		if store.KeyOnly(req) {
			return &store.AppendResponse{LastSeq: sess.LastSeq}, nil, nil
		}
	}
	// Steps already in the visible log: a request whose steps are all
	// stored (the same steps) is a retry and stores nothing; a request
	// reusing IDs otherwise is refused.
	ids := make([]string, len(req.Steps))
	for i, st := range req.Steps {
		ids[i] = st.Info().ID
	}
	var existing map[string]store.StoredStep
	if own != nil {
		existing = own.Steps
		if existing == nil {
			existing = map[string]store.StoredStep{}
		}
	}
	switch {
	case own == nil:
		existing = make(map[string]store.StoredStep, len(ids))
		if err := s.findStepIDs(ctx, q, segs, ids, existing); err != nil {
			return nil, nil, err
		}
	case len(segs) > 1 && len(existing) < len(ids):
		if err := s.findStepIDs(ctx, q, segs[:len(segs)-1], ids, existing); err != nil {
			return nil, nil, err
		}
	}
	if len(existing) > 0 {
		resp, err := s.retried(ctx, q, segs, req, ids, existing, sess.LastSeq)
		if resp != nil || err != nil {
			return resp, nil, err
		}
	}
	if req.ExpectedLastSeq != nil && *req.ExpectedLastSeq != sess.LastSeq {
		return nil, nil, s.conflict("session %q: expected last seq %d, it is %d", sess.ID, *req.ExpectedLastSeq, sess.LastSeq)
	}
	if req.Compaction != nil {
		if err := s.checkCompaction(ctx, q, segs, req.Compaction, sess.LastSeq); err != nil {
			return nil, nil, err
		}
	}

	// Number the new steps and encode them.
	next := sess.LastSeq
	seqs := make([]int64, len(req.Steps))
	rows := make([]EntryRow, 0, len(req.Steps)+1)
	for i, st := range req.Steps {
		next++
		seqs[i] = next
		var pre []byte
		if i < len(encoded) {
			pre = encoded[i]
		}
		body, err := encodeNumbered(st, pre, next)
		if err != nil {
			return nil, nil, fmt.Errorf("steps[%d]: %w", i, err)
		}
		rows = append(rows, EntryRow{Seq: next, Kind: store.StepEntry, StepID: ids[i], Body: body})
	}
	resp := &store.AppendResponse{Seqs: seqs}
	if c := req.Compaction; c != nil {
		resolved, err := store.ResolveCompaction(c, seqs)
		if err != nil {
			return nil, nil, err
		}
		if !c.Amend { // an amendment keeps the working set's steps
			ws, err := s.workingSteps(ctx, q, segs)
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
		rows = append(rows, EntryRow{Seq: next, Kind: store.CompactionEntry, Body: body})
	}
	resp.LastSeq = next
	return resp, rows, nil
}

// Steps are encoded by the goroutine that calls Append, before it waits
// for the database (store.ValidateAppendEncoded), so that under the
// session's lock (or in SQLite's committer, which runs the appends of
// every goroutine one after the other) only each step's sequence number
// is spliced into its encoding: JSON encoding is otherwise a large share
// of that serial time.

// encodeNumbered returns store.EncodeStep(store.WithNumber(st, seq)),
// from pre (st's encoding by store.ValidateAppendEncoded) when it can.
func encodeNumbered(st agentmem.Step, pre []byte, seq int64) ([]byte, error) {
	if b, ok := Renumber(pre, st.Kind(), seq); ok {
		return b, nil
	}
	return store.EncodeStep(numbered(st, seq))
}

// numbered returns st numbered n (see store.WithNumber), st itself if it
// already is.
func numbered(st agentmem.Step, n int64) agentmem.Step {
	if int64(st.Info().Number) == n {
		return st
	}
	return store.WithNumber(st, n)
}

// Renumber replaces the number of an encoded step with seq. The core
// encodes a step as {"type":"<kind>","number":<n>,...}; if b does not
// start that way, Renumber reports false and the caller encodes the step
// again. TestRenumber (store/sqlite) checks that the result is byte for
// byte the encoding of the numbered step, for every kind of step.
func Renumber(b []byte, kind agentmem.StepKind, seq int64) ([]byte, bool) {
	prefix := `{"type":"` + string(kind) + `","number":`
	if !bytes.HasPrefix(b, []byte(prefix)) {
		return nil, false
	}
	rest := b[len(prefix):]
	i := 0
	if i < len(rest) && rest[i] == '-' {
		i++
	}
	j := i
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	if j == i || j == len(rest) || (rest[j] != ',' && rest[j] != '}') {
		return nil, false
	}
	out := make([]byte, 0, len(b)+20)
	out = append(out, prefix...)
	out = strconv.AppendInt(out, seq, 10)
	return append(out, rest[j:]...), true
}
