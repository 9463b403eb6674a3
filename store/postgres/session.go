package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// querier is what pgx.Tx and *pgxpool.Pool have in common.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// sessionRow is a row of the sessions table: the session plus where its
// inherited history is read from.
type sessionRow struct {
	store.Session
	// baseID and baseSeq: the session sees baseID's visible log up to and
	// including baseSeq ("" and 0: nothing is inherited).
	baseID  string
	baseSeq int64
}

const sessionColumns = `id, tenant, user_id, agent, parent_id, fork_seq, base_id, base_seq,
	metadata, retention, expires_at, created_at, updated_at, last_seq`

func scanSession(row pgx.Row) (*sessionRow, error) {
	var (
		r                  sessionRow
		parentID, baseID   *string
		metadata           *string
		retention          string
		expiresAt          *time.Time
		createdAt, updated time.Time
	)
	err := row.Scan(&r.ID, &r.Tenant, &r.UserID, &r.Agent, &parentID, &r.ForkSeq, &baseID, &r.baseSeq,
		&metadata, &retention, &expiresAt, &createdAt, &updated, &r.LastSeq)
	if err != nil {
		return nil, err
	}
	if parentID != nil {
		r.ParentID = *parentID
	}
	if baseID != nil {
		r.baseID = *baseID
	}
	if metadata != nil {
		if err := json.Unmarshal([]byte(*metadata), &r.Metadata); err != nil {
			return nil, fmt.Errorf("session %q: metadata: %w", r.ID, err)
		}
	}
	r.Retention = store.Retention(retention)
	if expiresAt != nil {
		r.ExpiresAt = expiresAt.UTC()
	}
	r.CreatedAt = createdAt.UTC()
	r.UpdatedAt = updated.UTC()
	return &r, nil
}

// loadSession reads the row of a tenant's session, with lock ("", "FOR
// UPDATE", ...). A missing session is ErrNotFound, and so is an expired
// one unless includeExpired.
func loadSession(ctx context.Context, q querier, tenant, id, lock string, now time.Time, includeExpired bool) (*sessionRow, error) {
	r, err := scanSession(q.QueryRow(ctx, "SELECT "+sessionColumns+" FROM sessions WHERE tenant = $1 AND id = $2 "+lock, tenant, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, err
	}
	if !includeExpired && r.Expired(now) {
		return nil, notFound(id)
	}
	return r, nil
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func encodeMetadata(md map[string]string) (*string, error) {
	if len(md) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(md)
	if err != nil {
		return nil, err
	}
	s := string(b)
	return &s, nil
}

// checkNoNUL refuses a text value PostgreSQL cannot store: its text type
// has no room for the byte 0, which is valid UTF-8 and so passes the
// store's own checks. The refusal is ErrInvalid, before any SQL runs.
func checkNoNUL(field, v string) error {
	if strings.IndexByte(v, 0) >= 0 {
		return &agentmem.InvalidError{Field: field, Reason: "contains the byte 0, which PostgreSQL text cannot hold"}
	}
	return nil
}

// insertSession inserts a session row unless its tenant has one with its ID, and
// reports whether it did.
func insertSession(ctx context.Context, q querier, r *sessionRow) (bool, error) {
	md, err := encodeMetadata(r.Metadata)
	if err != nil {
		return false, err
	}
	tag, err := q.Exec(ctx, "INSERT INTO sessions ("+sessionColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
		ON CONFLICT (tenant, id) DO NOTHING`,
		r.ID, r.Tenant, r.UserID, r.Agent, nullString(r.ParentID), r.ForkSeq, nullString(r.baseID), r.baseSeq,
		md, string(r.Retention), nullTime(r.ExpiresAt), r.CreatedAt, r.UpdatedAt, r.LastSeq)
	if err != nil || tag.RowsAffected() != 1 {
		return false, err
	}
	if r.ParentID != "" {
		// A branch: its inherited log is part of its visible log now.
		if _, err := q.Exec(ctx, feedAppendSQL+` VALUES ('fork', $1, $2, $3)`, r.ID, r.Tenant, r.ForkSeq); err != nil {
			return false, err
		}
	}
	return true, nil
}

// Create implements store.Store. A branch locks its parent's row against
// a concurrent Delete (FOR KEY SHARE, which appenders of the parent do
// not wait for) while it reads the fork point.
func (s *Store) Create(ctx context.Context, req store.CreateRequest) (*store.Session, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := store.ValidateCreate(req); err != nil {
		return nil, err
	}
	if err := checkSessionText(req.Tenant, req.UserID, req.Agent); err != nil {
		return nil, err
	}
	now := s.now()
	var out *store.Session
	err := s.write(ctx, "create", func(tx pgx.Tx) error {
		r := &sessionRow{}
		req := req
		if req.ID != "" {
			// An ID in use is a conflict whatever else is wrong (as
			// every backend reports it), so look before the parent.
			var one int
			err := tx.QueryRow(ctx, "SELECT 1 FROM sessions WHERE tenant = $1 AND id = $2", req.Tenant, req.ID).Scan(&one)
			if err == nil {
				return fmt.Errorf("postgres: session %q already exists: %w", req.ID, agentmem.ErrConflict)
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		if req.ParentID != "" {
			parent, err := loadSession(ctx, tx, req.Tenant, req.ParentID, "FOR KEY SHARE", now, false)
			if err != nil {
				return fmt.Errorf("parent: %w", err)
			}
			switch {
			case req.ForkSeq == 0:
				req.ForkSeq = parent.LastSeq
			case req.ForkSeq > parent.LastSeq:
				return &agentmem.InvalidError{Field: "fork_seq",
					Reason: fmt.Sprintf("%d is after the last entry of session %q (%d)", req.ForkSeq, parent.ID, parent.LastSeq)}
			}
			r.baseID, r.baseSeq = parent.ID, req.ForkSeq
		}
		r.Session = *store.NewSession(req, now)
		ok, err := insertSession(ctx, tx, r)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("postgres: session %q already exists: %w", r.ID, agentmem.ErrConflict)
		}
		out = r.Session.Clone()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkSessionText refuses tenant, user and agent names PostgreSQL cannot
// store (see checkNoNUL).
func checkSessionText(tenant, userID, agent string) error {
	for _, f := range []struct{ name, v string }{{"tenant", tenant}, {"user_id", userID}, {"agent", agent}} {
		if err := checkNoNUL(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// Get implements store.Store. An expired session is not found.
func (s *Store) Get(ctx context.Context, tenant, id string) (*store.Session, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := store.ValidateKey(tenant, id); err != nil {
		return nil, err
	}
	if err := checkNoNUL("tenant", tenant); err != nil {
		return nil, err
	}
	r, err := loadSession(ctx, s.pool, tenant, id, "", s.now(), false)
	if err != nil {
		return nil, s.dbErr("get", err)
	}
	return &r.Session, nil
}

// List implements store.Store: sessions newest first (created_at, then ID,
// descending), expired ones left out, in pages that resume after the page
// token's cursor. The filters and the cursor are one index range scan.
func (s *Store) List(ctx context.Context, req store.ListRequest) (*store.ListResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	pageSize, after, err := store.ValidateList(req)
	if err != nil {
		return nil, err
	}
	if err := checkSessionText(req.Tenant, req.UserID, req.Agent); err != nil {
		return nil, err
	}
	now := s.now()
	var (
		where = []string{"(retention = 'persistent' OR expires_at IS NULL OR expires_at > $1)"}
		args  = []any{now}
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	for _, f := range []struct{ col, v string }{{"tenant", req.Tenant}, {"user_id", req.UserID}, {"agent", req.Agent}} {
		if f.v != "" {
			where = append(where, f.col+" = "+arg(f.v))
		}
	}
	if after != nil {
		where = append(where, "(created_at, id, tenant) < ("+arg(after.CreatedAt)+", "+arg(after.ID)+", "+arg(after.Tenant)+")")
	}
	query := "SELECT " + sessionColumns + " FROM sessions WHERE " + strings.Join(where, " AND ") +
		" ORDER BY created_at DESC, id DESC, tenant DESC LIMIT " + arg(pageSize+1)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, s.dbErr("list", err)
	}
	defer rows.Close()
	resp := &store.ListResponse{}
	for rows.Next() {
		r, err := scanSession(rows)
		if err != nil {
			return nil, s.dbErr("list", err)
		}
		resp.Sessions = append(resp.Sessions, &r.Session)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr("list", err)
	}
	if len(resp.Sessions) > pageSize {
		resp.Sessions = resp.Sessions[:pageSize]
		last := resp.Sessions[pageSize-1]
		resp.NextPageToken = store.EncodePageToken(store.Cursor{CreatedAt: last.CreatedAt, ID: last.ID, Tenant: last.Tenant})
	}
	return resp, nil
}

// Delete implements store.Store. The sessions that read their history
// through this one (its branches) get the entries they inherited from it
// copied into their own logs first, and then read the rest from where this
// one did; so a branch loses nothing when its parent goes.
//
// Deleting an expired session that Prune has not yet removed succeeds.
//
// Locks: the session's row FOR UPDATE (which waits for its appenders and
// for branches being created from it), then the rows of its branches, in
// ID order, FOR UPDATE (which waits for their appenders).
func (s *Store) Delete(ctx context.Context, tenant, id string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := store.ValidateKey(tenant, id); err != nil {
		return err
	}
	return s.write(ctx, "delete", func(tx pgx.Tx) error {
		r, err := loadSession(ctx, tx, tenant, id, "FOR UPDATE", time.Time{}, true)
		if err != nil {
			return err
		}
		return deleteSession(ctx, tx, r)
	})
}

// deleteSession deletes a session whose row the transaction has locked,
// after handing its history to the sessions based on it.
func deleteSession(ctx context.Context, tx pgx.Tx, r *sessionRow) error {
	rows, err := tx.Query(ctx, "SELECT id, base_seq FROM sessions WHERE tenant = $1 AND base_id = $2 ORDER BY id FOR UPDATE", r.Tenant, r.ID)
	if err != nil {
		return err
	}
	type dependent struct {
		id      string
		baseSeq int64
	}
	var deps []dependent
	for rows.Next() {
		var d dependent
		if err := rows.Scan(&d.id, &d.baseSeq); err != nil {
			rows.Close()
			return err
		}
		deps = append(deps, d)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, d := range deps {
		// The entries d sees through r that r owns: r's own ones up to
		// d's base point. What r inherited, d goes on reading from r's
		// base, up to the lower of the two base points.
		rows, err := tx.Query(ctx, `INSERT INTO entries (tenant, session_id, seq, kind, step_id, body, created_at)
			SELECT tenant, $1, seq, kind, step_id, body, created_at FROM entries
			WHERE tenant = $5 AND session_id = $2 AND seq > $3 AND seq <= $4
			RETURNING seq`,
			d.id, r.ID, r.baseSeq, d.baseSeq, r.Tenant)
		if err != nil {
			return err
		}
		seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		// Recorded in the feed as appends to d (store.ChangeAppend), from
		// the list of seqs (a SELECT of the copies would read every shard
		// on Citus: the row's xid is computed on the coordinator).
		if _, err := tx.Exec(ctx, feedAppendSQL+` SELECT 'append', $1, $2, u.seq FROM unnest($3::bigint[]) AS u (seq) ORDER BY u.seq`,
			d.id, r.Tenant, seqs); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "UPDATE sessions SET base_id = $2, base_seq = $3 WHERE tenant = $4 AND id = $1",
			d.id, nullString(r.baseID), min(d.baseSeq, r.baseSeq), r.Tenant); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, "DELETE FROM sessions WHERE tenant = $1 AND id = $2", r.Tenant, r.ID); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, feedAppendSQL+` VALUES ('delete', $1, $2, 0)`, r.ID, r.Tenant)
	return err
}
