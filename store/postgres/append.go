package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/agentmem/internal/pgdb"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/internal/sqlstore"
	"github.com/agentmem/agentmem/store/storekit"
)

// Append implements store.Driver. The request is validated, and its steps
// encoded, before the transaction starts. Everything else happens in one
// transaction that first locks the session's row with FOR NO KEY UPDATE:
// appenders of the session queue on it, while readers, branch creation
// and the foreign-key checks of the inserts do not. So the entries are
// stored all or none, numbered without gaps, and concurrent appenders of
// one session, in any number of processes, are serialized. What it
// checks under the lock is the shared store's (sqlstore.PlanAppend).
//
// The transaction is pipelined: BEGIN, the lock and the lookup of the
// request's step IDs go to the server together, and so do the insert and
// COMMIT. An append to a session that is no branch thus costs two round
// trips, which counts on a remote database. Appends to one session
// from this process take turns before they take a connection
// (Store.queue).
func (s *Store) Append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	encoded, err := sqlstore.ValidateAppend(s.Store, req)
	if err != nil {
		return nil, err
	}
	now := sqlstore.Now(s.Store)
	done, err := s.queue.Wait(ctx, store.Key{Tenant: req.Tenant, ID: req.SessionID})
	if err != nil {
		return nil, sqlstore.Err(s.Store, "append", err)
	}
	defer done()
	for attempt := 1; ; attempt++ {
		resp, err := s.appendOnce(ctx, req, encoded, now)
		if err == nil {
			return resp, nil
		}
		if attempt < pgdb.MaxAttempts && (pgdb.Retryable(err) || pgdb.IsUniqueViolation(err)) && ctx.Err() == nil {
			continue
		}
		return nil, sqlstore.Err(s.Store, "append", err)
	}
}

// An append retries a unique violation too (up to pgdb.MaxAttempts): an
// entry numbered, or a step ID logged, by another appender of the
// session that the row lock did not keep out. The lock keeps every other
// appender out on PostgreSQL. On Citus, though, an append that locked the
// session's row on a shard's old placement just before a move's
// switch-over inserts on the new one, after appends the lock did not
// see. The transaction wrote nothing, and the next attempt locks the row
// where it is now and plans again, seeing those appends. The append thus
// takes its turn, or is found already stored, instead of failing with
// ErrConflict.

// appendOnce runs Append's transaction once.
func (s *Store) appendOnce(ctx context.Context, req store.AppendRequest, encoded [][]byte, now time.Time) (*store.AppendResponse, error) {
	if err := sqlstore.CheckOpen(s.Store); err != nil {
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
	key := ""
	if req.Idempotency != nil {
		key = req.Idempotency.Key
	}
	sess, own, err := s.lockForAppend(ctx, conn, req.Tenant, req.SessionID, ids, key, now)
	if err != nil {
		abort(conn)
		return nil, err
	}
	resp, rows, err := sqlstore.PlanAppend(ctx, s.Store, pgdb.NewQuerier(conn), sess, req, encoded, own)
	if err != nil {
		abort(conn)
		return nil, err
	}
	b := &pgx.Batch{}
	if len(rows) > 0 {
		sql, args := appendStatement(sess, rows, now, resp.LastSeq, req.Idempotency, resp)
		b.Queue(sql, args...)
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
// finds which of ids are steps of the session's own log and the record of
// the idempotency key (if not "") in it, in one round trip. The lookups
// run after the lock is granted (the server runs the pipelined
// statements in order, each with a snapshot of its own), so they see
// every append committed before. A missing or expired session is
// ErrNotFound.
func (s *Store) lockForAppend(ctx context.Context, conn *pgxpool.Conn, tenant, id string, ids []string, key string, now time.Time) (*sqlstore.SessionRow, *sqlstore.Own, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(sqlstore.LockForAppendSQL(s.Store), tenant, id)
	switch len(ids) {
	case 0:
	case 1:
		// An equality on every column of the step-ID index: its plan looks
		// the ID up whatever the table's statistics say. With = ANY, the
		// generic plan of a table analyzed while small filters the
		// session's whole log instead.
		b.Queue("SELECT step_id, seq, body FROM entries WHERE tenant = $1 AND session_id = $2 AND step_id = $3", tenant, id, ids[0])
	default:
		b.Queue("SELECT step_id, seq, body FROM entries WHERE tenant = $1 AND session_id = $2 AND step_id = ANY($3)", tenant, id, ids)
	}
	if key != "" {
		b.Queue(sqlstore.SelectKeySQL, tenant, id, key)
	}
	br := conn.SendBatch(ctx, b)
	sess, own, err := func() (*sqlstore.SessionRow, *sqlstore.Own, error) {
		if _, err := br.Exec(); err != nil {
			return nil, nil, err
		}
		sess, err := sqlstore.ScanSession(br.QueryRow())
		if errors.Is(err, pgx.ErrNoRows) {
			err = sqlstore.NotFound(s.Store, id)
		}
		if err != nil {
			return nil, nil, err
		}
		own := make(map[string]storekit.StoredStep, len(ids))
		if len(ids) > 0 {
			rows, err := br.Query()
			if err != nil {
				return nil, nil, err
			}
			var (
				stepID string
				st     storekit.StoredStep
			)
			if _, err := pgx.ForEachRow(rows, []any{&stepID, &st.Seq, &st.Body}, func() error {
				own[stepID] = st
				return nil
			}); err != nil {
				return nil, nil, err
			}
		}
		out := &sqlstore.Own{Steps: own}
		if key != "" {
			var r storekit.KeyRecord
			var steps int64
			err := br.QueryRow().Scan(&r.Fingerprint, &r.Seq, &r.LastSeq, &steps)
			switch {
			case err == nil:
				r.Steps = int(steps)
				out.Key = &r
			case !errors.Is(err, pgx.ErrNoRows):
				return nil, nil, err
			}
		}
		return sess, out, nil
	}()
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, nil, err
	}
	if sess.Expired(now) {
		return nil, nil, sqlstore.NotFound(s.Store, id)
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

// appendStatement is the one statement that inserts an append's entries
// and their changes of the feed, and moves the session's last_seq: rows
// as VALUES lists, in sequence order (the feed's pos follows it).
//
// Not INSERT ... SELECT FROM unnest(arrays). On Citus such an insert,
// followed by another write in the transaction (the session's update),
// goes through a connection of its own. The transaction then commits in
// two phases, its worker after the coordinator (see
// sqlstore.FeedAppendValues). VALUES lists keep the transaction on one
// connection.
func appendStatement(sess *sqlstore.SessionRow, rows []sqlstore.EntryRow, now time.Time, lastSeq int64, key *store.Idempotency, resp *store.AppendResponse) (string, []any) {
	args := make([]any, 0, 4+4*len(rows))
	args = append(args, sess.ID, sess.Tenant, now, lastSeq)
	var entries strings.Builder
	for i, r := range rows {
		var stepID *string
		if r.StepID != "" {
			stepID = &r.StepID
		}
		args = append(args, r.Seq, string(r.Kind), stepID, r.Body)
		if i > 0 {
			entries.WriteString(", ")
		}
		p := func(k int) string { return "$" + strconv.Itoa(len(args)-4+k) }
		entries.WriteString("($2, $1, " + p(1) + "::bigint, " + p(2) + ", " + p(3) + ", " + p(4) + "::bytea, $3)")
	}
	keys := ""
	if key != nil {
		// The key's record, in the same statement (sqlstore.InsertKeySQL).
		n := len(args)
		args = append(args, sqlstore.KeyArgs(key, resp)...)
		p := func(k int) string { return "$" + strconv.Itoa(n+k) }
		keys = `, keys AS (
			INSERT INTO idempotency_keys (tenant, session_id, request_key, fingerprint, seq, last_seq, steps)
			VALUES ($2, $1, ` + p(1) + `, ` + p(2) + `, ` + p(3) + `::bigint, ` + p(4) + `::bigint, ` + p(5) + `::integer)
		)`
	}
	return `WITH ins AS (
			INSERT INTO entries (tenant, session_id, seq, kind, step_id, body, created_at) VALUES ` + entries.String() + `
		)` + keys + `, feed AS (
			` + sqlstore.FeedAppendSQL + ` ` + sqlstore.FeedAppendValues(1, 2, 5, 4, len(rows)) + `
		)
		UPDATE sessions SET last_seq = $4, updated_at = $3 WHERE tenant = $2 AND id = $1`, args
}
