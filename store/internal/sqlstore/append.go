package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storekit"
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
// under lock: $1 the tenant, $2 the ID, its row scanned by ScanSession. On
// PostgreSQL the lock is FOR NO KEY UPDATE: the appenders of the session
// queue on its row, while readers, branch creation and the foreign-key
// checks of the inserts do not.
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
// of steps (storekit.NewKeyRecord).
func KeyArgs(k *store.Idempotency, resp *store.AppendResponse) []any {
	r := storekit.NewKeyRecord(k.Fingerprint, resp)
	return []any{k.Key, r.Fingerprint, r.Seq, r.LastSeq, int64(r.Steps)}
}

// Own is what PostgreSQL's append finds of a request in the session's own
// log in the round trip that takes the lock (see PlanAppend).
type Own struct {
	// Steps are the request's steps found, by ID.
	Steps map[string]storekit.StoredStep
	// Key is the record of the request's idempotency key, if the session
	// has one of its own.
	Key *storekit.KeyRecord
}

// PlanAppend is an append under the session's lock, up to what it
// writes: storekit.PlanAppend over the session's visible log. It returns the
// response and the rows to insert (none for a retry or a request that
// only checks its key); when there are rows and the request has a key,
// the caller records it too (InsertKeySQL), in the same transaction.
//
// own, when not nil, holds what the request has in the session's own log
// (PostgreSQL looks it up in the round trip that takes the lock); the
// view then looks only in the inherited log. encoded holds the steps'
// encodings by store.ValidateAppendEncoded, or is nil.
func PlanAppend(ctx context.Context, s *Store, q sqldb.Querier, sess *SessionRow, req store.AppendRequest, encoded [][]byte, own *Own) (*store.AppendResponse, []EntryRow, error) {
	segs, err := segments(ctx, q, sess)
	if err != nil {
		return nil, nil, err
	}
	v := &logView{s: s, q: q, segs: segs, own: own}
	resp, add, err := storekit.PlanAppend(ctx, v, sess.ID, sess.LastSeq, req, encoded)
	if err != nil || len(add) == 0 {
		return resp, nil, err
	}
	rows := make([]EntryRow, len(add))
	for i, e := range add {
		rows[i] = EntryRow{Seq: e.Seq, Kind: e.Kind, StepID: e.StepID, Body: e.Body}
	}
	return resp, rows, nil
}

// logView is storekit.LogView over the segments of a session's visible log,
// inside the append's transaction.
type logView struct {
	s    *Store
	q    sqldb.Querier
	segs []segment
	own  *Own
}

// Key implements storekit.LogView.
func (v *logView) Key(ctx context.Context, key string) (*storekit.KeyRecord, error) {
	switch {
	case v.own == nil:
		return v.s.findKey(ctx, v.q, v.segs, key)
	case v.own.Key != nil:
		return v.own.Key, nil
	case len(v.segs) > 1:
		return v.s.findKey(ctx, v.q, v.segs[:len(v.segs)-1], key)
	}
	return nil, nil
}

// StepsByID implements storekit.LogView.
func (v *logView) StepsByID(ctx context.Context, ids []string) (map[string]storekit.StoredStep, error) {
	if v.own == nil {
		found := make(map[string]storekit.StoredStep, len(ids))
		return found, v.s.findStepIDs(ctx, v.q, v.segs, ids, found)
	}
	found := v.own.Steps
	if found == nil {
		found = map[string]storekit.StoredStep{}
	}
	if len(v.segs) > 1 && len(found) < len(ids) {
		if err := v.s.findStepIDs(ctx, v.q, v.segs[:len(v.segs)-1], ids, found); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// CompactionAt implements storekit.LogView.
func (v *logView) CompactionAt(ctx context.Context, seq int64) (*store.CompactionRecord, error) {
	return compactionAt(ctx, v.q, v.segs, seq)
}

// CompactionLookup implements storekit.LogView.
func (v *logView) CompactionLookup(ctx context.Context, c *store.CompactionRecord, lastSeq int64) (func(int64) (agentmem.Step, bool), error) {
	return v.s.compactionLookup(ctx, v.q, v.segs, c, lastSeq)
}

// WorkingSteps implements storekit.LogView.
func (v *logView) WorkingSteps(ctx context.Context) ([]storekit.WorkingStep, error) {
	return v.s.workingSteps(ctx, v.q, v.segs)
}

// numbered returns st numbered n (see store.WithNumber), st itself if it
// already is.
func numbered(st agentmem.Step, n int64) agentmem.Step {
	if int64(st.Info().Number) == n {
		return st
	}
	return store.WithNumber(st, n)
}
