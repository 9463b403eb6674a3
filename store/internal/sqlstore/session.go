package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storekit"
)

// SessionRow is a row of the sessions table: the session plus where its
// inherited history is read from.
type SessionRow struct {
	store.Session
	// baseID and baseSeq: the session sees baseID's visible log up to and
	// including baseSeq ("" and 0: nothing is inherited).
	baseID  string
	baseSeq int64
}

// sessionColumns are the columns ScanSession reads, in its order.
const sessionColumns = `id, tenant, user_id, agent, parent_id, fork_seq, base_id, base_seq,
	metadata, retention, expires_at, created_at, updated_at, last_seq, settings`

// settings is the JSON form of the settings column: a session's settings,
// each left out when the session has none.
type settings struct {
	Pinning      *agentmem.Pinning  `json:"pinning,omitempty"`
	AutoCompact  *store.AutoCompact `json:"auto_compact,omitempty"`
	ExtractFacts *bool              `json:"extract_facts,omitempty"`
}

// scanner is a row to scan: sqldb.Row or sqldb.Rows, or a driver's.
type scanner interface{ Scan(dest ...any) error }

// ScanSession scans a row of sessionColumns. A row whose metadata or
// settings do not decode is damaged. It is returned all the same, with what
// does not decode left zero, and a *agentmem.DamagedError. What needs only
// the session's keys and log (Delete, Prune, the feed: see keysOnly) goes
// on; what returns the session fails or leaves it out.
func ScanSession(sc scanner) (*SessionRow, error) {
	// One allocation for the row and its nullable columns.
	row := &struct {
		r                                    SessionRow
		parentID, baseID, metadata, settings sql.NullString
	}{}
	r := &row.r
	err := sc.Scan(&r.ID, &r.Tenant, &r.UserID, &r.Agent, &row.parentID, &r.ForkSeq, &row.baseID, &r.baseSeq,
		&row.metadata, (*string)(&r.Retention), scanTime(&r.ExpiresAt), scanTime(&r.CreatedAt), scanTime(&r.UpdatedAt), &r.LastSeq,
		&row.settings)
	if err != nil {
		return nil, err
	}
	r.ParentID = row.parentID.String
	r.baseID = row.baseID.String
	if row.settings.Valid {
		var set settings
		if err := json.Unmarshal([]byte(row.settings.String), &set); err != nil {
			return r, &agentmem.DamagedError{Kind: "session", Tenant: r.Tenant, ID: r.ID, Err: fmt.Errorf("its settings do not decode: %w", err)}
		}
		r.Pinning, r.AutoCompact, r.ExtractFacts = set.Pinning, set.AutoCompact, set.ExtractFacts
	}
	if row.metadata.Valid {
		if err := json.Unmarshal([]byte(row.metadata.String), &r.Metadata); err != nil {
			r.Metadata = nil
			return r, &agentmem.DamagedError{Kind: "session", Tenant: r.Tenant, ID: r.ID, Err: fmt.Errorf("its metadata does not decode: %w", err)}
		}
	}
	return r, nil
}

// keysOnly returns a session row that loadSession returned with a
// *agentmem.DamagedError as if it were sound: what only needs its keys,
// fork point and log (deleting it, pruning it, listing its segments) does
// not need what does not decode.
func keysOnly(r *SessionRow, err error) (*SessionRow, error) {
	if r != nil && errors.Is(err, agentmem.ErrDamaged) {
		return r, nil
	}
	return r, err
}

// loadSession reads the row of a tenant's session, with lock (one of the
// dialect's, "" for none). A missing session is ErrNotFound, and so is
// an expired one unless includeExpired. A damaged one is returned with
// its *agentmem.DamagedError (see ScanSession and keysOnly).
func (s *Store) loadSession(ctx context.Context, q sqldb.Querier, tenant, id, lock string, now time.Time, includeExpired bool) (*SessionRow, error) {
	query := selectSession
	if lock != "" {
		query += lock
	}
	r, err := ScanSession(q.QueryRow(ctx, query, tenant, id))
	if errors.Is(err, sqldb.ErrNoRows) {
		return nil, s.notFound(id)
	}
	if r == nil {
		return nil, err
	}
	if !includeExpired && r.Expired(now) {
		return nil, s.notFound(id)
	}
	return r, err
}

const selectSession = "SELECT " + sessionColumns + " FROM sessions WHERE tenant = $1 AND id = $2"

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func encodeMetadata(md map[string]string) (any, error) {
	if len(md) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(md)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// encodeSettings returns the settings column of a session: NULL when it
// has no settings.
func encodeSettings(s *store.Session) (any, error) {
	if s.Pinning == nil && s.AutoCompact == nil && s.ExtractFacts == nil {
		return nil, nil
	}
	b, err := json.Marshal(settings{Pinning: s.Pinning, AutoCompact: s.AutoCompact, ExtractFacts: s.ExtractFacts})
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// insertSession inserts a session row unless its tenant has one with its
// ID, and reports whether it did. A branch's row records a fork in the
// feed.
func (s *Store) insertSession(ctx context.Context, q sqldb.Querier, r *SessionRow) (bool, error) {
	md, err := encodeMetadata(r.Metadata)
	if err != nil {
		return false, err
	}
	set, err := encodeSettings(&r.Session)
	if err != nil {
		return false, err
	}
	n, err := q.Exec(ctx, "INSERT INTO sessions ("+sessionColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
		ON CONFLICT (tenant, id) DO NOTHING`,
		r.ID, r.Tenant, r.UserID, r.Agent, nullString(r.ParentID), r.ForkSeq, nullString(r.baseID), r.baseSeq,
		md, string(r.Retention), s.d.time(r.ExpiresAt), s.d.time(r.CreatedAt), s.d.time(r.UpdatedAt), r.LastSeq, set)
	if err != nil || n != 1 {
		return false, err
	}
	if r.ParentID != "" && s.d.feedFork != "" {
		// A branch: its inherited log is part of its visible log now.
		if _, err := q.Exec(ctx, s.d.feedFork, r.ID, r.Tenant, r.ForkSeq); err != nil {
			return false, err
		}
	}
	return true, nil
}

// Create implements store.Driver. An ID in use is a conflict whatever
// else is wrong with the request. A branch locks its parent's row against
// a concurrent Delete (FOR KEY SHARE on PostgreSQL, which appenders of
// the parent do not wait for) while it reads the fork point.
func (s *Store) Create(ctx context.Context, req store.CreateRequest) (*store.Session, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := s.checkSessionText(req.Tenant, req.UserID, req.Agent); err != nil {
		return nil, err
	}
	now := s.now()
	var out *store.Session
	err := s.write(ctx, "create", func(tx sqldb.Tx) error {
		r := &SessionRow{}
		req := req
		if req.ID != "" {
			var one int
			err := tx.QueryRow(ctx, "SELECT 1 FROM sessions WHERE tenant = $1 AND id = $2", req.Tenant, req.ID).Scan(&one)
			if err == nil {
				return &store.ExistsError{Tenant: req.Tenant, ID: req.ID}
			}
			if !errors.Is(err, sqldb.ErrNoRows) {
				return err
			}
		}
		if req.ParentID != "" {
			parent, err := s.loadSession(ctx, tx, req.Tenant, req.ParentID, s.d.forKeyShare, now, false)
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
		r.Session = *storekit.NewSession(req, now)
		ok, err := s.insertSession(ctx, tx, r)
		if err != nil {
			return err
		}
		if !ok {
			return &store.ExistsError{Tenant: r.Tenant, ID: r.ID}
		}
		out = r.Session.Clone()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Get implements store.Driver. An expired session is not found.
func (s *Store) Get(ctx context.Context, tenant, id string) (*store.Session, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := s.checkText("tenant", tenant); err != nil {
		return nil, err
	}
	r, err := s.loadSession(ctx, s.db.Reader(), tenant, id, "", s.now(), false)
	if err != nil {
		return nil, s.err("get", err)
	}
	return &r.Session, nil
}

// Head implements store.HeadReader: the session's row, but only the
// columns its head and its expiry need, and nothing to decode.
func (s *Store) Head(ctx context.Context, tenant, id string) (store.Head, error) {
	if err := s.checkOpen(); err != nil {
		return store.Head{}, err
	}
	if err := s.checkText("tenant", tenant); err != nil {
		return store.Head{}, err
	}
	var (
		h   store.Head
		exp store.Session // the expiry's fields, for Expired
	)
	err := s.db.Reader().QueryRow(ctx, selectHead, tenant, id).Scan(scanTime(&h.CreatedAt), &h.LastSeq, (*string)(&exp.Retention), scanTime(&exp.ExpiresAt))
	switch {
	case errors.Is(err, sqldb.ErrNoRows):
		err = s.notFound(id)
	case err == nil && exp.Expired(s.now()):
		err = s.notFound(id)
	}
	if err != nil {
		return store.Head{}, s.err("head", err)
	}
	return h, nil
}

const selectHead = "SELECT created_at, last_seq, retention, expires_at FROM sessions WHERE tenant = $1 AND id = $2"

// List implements store.Driver: sessions newest first (created_at, then
// ID, then tenant, descending), expired ones left out, in pages that
// resume after the page token's cursor. Each filter has an index in
// List's order, so the filters and the cursor are one index range scan
// and a page costs its size, not the number of sessions.
func (s *Store) List(ctx context.Context, req store.ListRequest) (*store.ListResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	pageSize, after, err := store.ValidateList(req)
	if err != nil {
		return nil, err
	}
	if err := s.checkSessionText(req.Tenant, req.UserID, req.Agent); err != nil {
		return nil, err
	}
	var (
		where = []string{"(retention = 'persistent' OR expires_at IS NULL OR expires_at > $1)"}
		args  = []any{s.d.time(s.now())}
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if req.Tenant != "" || req.ExactTenant {
		where = append(where, "tenant = "+arg(req.Tenant))
	}
	for _, f := range []struct{ col, v string }{{"user_id", req.UserID}, {"agent", req.Agent}, {"parent_id", req.ParentID}} {
		if f.v != "" {
			where = append(where, f.col+" = "+arg(f.v))
		}
	}
	if after != nil {
		where = append(where, "(created_at, id, tenant) < ("+arg(s.d.time(after.CreatedAt))+", "+arg(after.ID)+", "+arg(after.Tenant)+")")
	}
	// One more than a page tells whether there is a next one.
	query := "SELECT " + sessionColumns + " FROM sessions WHERE " + strings.Join(where, " AND ") +
		" ORDER BY created_at DESC, id DESC, tenant DESC LIMIT " + arg(pageSize+1)
	resp := &store.ListResponse{}
	var (
		page []*SessionRow // the page's rows, damaged ones too, whose last makes the cursor
		more bool
	)
	err = func() error {
		rows, err := s.db.Reader().Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if len(page) == pageSize {
				more = true
				break
			}
			r, err := ScanSession(rows)
			var d *agentmem.DamagedError
			if errors.As(err, &d) {
				resp.Damaged = append(resp.Damaged, d)
			} else if err != nil {
				return err
			} else {
				resp.Sessions = append(resp.Sessions, &r.Session)
			}
			page = append(page, r)
		}
		return rows.Err()
	}()
	if err != nil {
		return nil, s.err("list", err)
	}
	for _, d := range resp.Damaged {
		agentmem.ReportDamaged(ctx, d)
	}
	if more {
		last := page[pageSize-1]
		resp.NextPageToken = store.EncodePageToken(store.Cursor{CreatedAt: last.CreatedAt, ID: last.ID, Tenant: last.Tenant})
	}
	return resp, nil
}

// Delete implements store.Driver. The sessions that read their history
// through this one (its branches) get the entries they inherited from it
// copied into their own logs first, and then read the rest from where
// this one did; so a branch loses nothing when its parent goes. Deleting
// an expired session that Prune has not yet removed succeeds.
//
// Locks on PostgreSQL: the session's row FOR UPDATE (which waits for its
// appenders and for branches being created from it), then the rows of
// its branches, in ID order, FOR UPDATE (which waits for their
// appenders).
func (s *Store) Delete(ctx context.Context, tenant, id string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	return s.write(ctx, "delete", func(tx sqldb.Tx) error {
		r, err := keysOnly(s.loadSession(ctx, tx, tenant, id, s.d.forUpdate, time.Time{}, true))
		if err != nil {
			return err
		}
		return s.deleteSession(ctx, tx, r)
	})
}

// deleteSession deletes a session whose row the transaction has locked,
// after handing its history to the sessions that read through it.
//
// A session d with base p sees p's own entries with p.baseSeq < seq <=
// d.baseSeq and, below that, p's base up to min(d.baseSeq, p.baseSeq).
// So d gets copies of the first part and reads the rest from p's base:
// its visible log is unchanged, and nothing is copied twice. (The
// provenance d.ParentID and d.ForkSeq does not change.)
func (s *Store) deleteSession(ctx context.Context, tx sqldb.Tx, p *SessionRow) error {
	type dependent struct {
		id      string
		baseSeq int64
	}
	var deps []dependent
	err := queryRows(ctx, tx, "SELECT id, base_seq FROM sessions WHERE tenant = $1 AND base_id = $2 ORDER BY id"+s.d.forUpdate,
		[]any{p.Tenant, p.ID}, func(rows sqldb.Rows) error {
			var d dependent
			if err := rows.Scan(&d.id, &d.baseSeq); err != nil {
				return err
			}
			deps = append(deps, d)
			return nil
		})
	if err != nil {
		return err
	}
	const copyEntries = `INSERT INTO entries (tenant, session_id, seq, kind, step_id, body, created_at)
		SELECT tenant, $1, seq, kind, step_id, body, created_at FROM entries
		WHERE tenant = $2 AND session_id = $3 AND seq > $4 AND seq <= $5`
	const copyKeys = `INSERT INTO idempotency_keys (tenant, session_id, request_key, fingerprint, seq, last_seq, steps)
		SELECT tenant, $1, request_key, fingerprint, seq, last_seq, steps FROM idempotency_keys
		WHERE tenant = $2 AND session_id = $3 AND seq > $4 AND last_seq <= $5`
	for _, d := range deps {
		args := []any{d.id, p.Tenant, p.ID, p.baseSeq, d.baseSeq}
		if s.d.feedAppends == "" {
			if _, err := tx.Exec(ctx, copyEntries, args...); err != nil {
				return err
			}
		} else {
			// Recorded in the feed as appends to d (store.ChangeAppend),
			// from the list of seqs (a SELECT of the copies would read
			// every shard on Citus: the row's xid is computed on the
			// coordinator).
			var seqs []int64
			if err := queryRows(ctx, tx, copyEntries+" RETURNING seq", args, func(rows sqldb.Rows) error {
				var seq int64
				err := rows.Scan(&seq)
				seqs = append(seqs, seq)
				return err
			}); err != nil {
				return err
			}
			if err := s.recordAppends(ctx, tx, p.Tenant, d.id, seqs); err != nil {
				return err
			}
		}
		// The records of the idempotency keys of the entries copied.
		if _, err := tx.Exec(ctx, copyKeys, args...); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "UPDATE sessions SET base_id = $1, base_seq = $2 WHERE tenant = $3 AND id = $4",
			nullString(p.baseID), min(d.baseSeq, p.baseSeq), p.Tenant, d.id); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, "DELETE FROM entries WHERE tenant = $1 AND session_id = $2", p.Tenant, p.ID); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "DELETE FROM idempotency_keys WHERE tenant = $1 AND session_id = $2", p.Tenant, p.ID); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "DELETE FROM sessions WHERE tenant = $1 AND id = $2", p.Tenant, p.ID); err != nil {
		return err
	}
	if s.d.feedDelete != "" {
		_, err = tx.Exec(ctx, s.d.feedDelete, p.ID, p.Tenant)
	}
	return err
}

// recordAppends records appended entries in the feed, where the store's
// statements write it (PostgreSQL; SQLite's triggers do).
func (s *Store) recordAppends(ctx context.Context, q sqldb.Querier, tenant, id string, seqs []int64) error {
	if s.d.feedAppends == "" || len(seqs) == 0 {
		return nil
	}
	args := make([]any, 0, 2+len(seqs))
	args = append(args, id, tenant)
	for _, seq := range seqs {
		args = append(args, seq)
	}
	_, err := q.Exec(ctx, s.d.feedAppends+FeedAppendValues(1, 2, 3, 1, len(seqs)), args...)
	return err
}

// queryRows runs a query and calls fn for each row.
func queryRows(ctx context.Context, q sqldb.Querier, query string, args []any, fn func(rows sqldb.Rows) error) error {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
