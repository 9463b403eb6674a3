package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// querier is what *sql.Tx, *sql.DB and cachedTx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
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

// scanner is *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

func scanSession(sc scanner) (*sessionRow, error) {
	var (
		r                  sessionRow
		parentID, baseID   sql.NullString
		metadata           sql.NullString
		expiresAt          sql.NullInt64
		createdAt, updated int64
	)
	err := sc.Scan(&r.ID, &r.Tenant, &r.UserID, &r.Agent, &parentID, &r.ForkSeq, &baseID, &r.baseSeq,
		&metadata, &r.Retention, &expiresAt, &createdAt, &updated, &r.LastSeq)
	if err != nil {
		return nil, err
	}
	r.ParentID = parentID.String
	r.baseID = baseID.String
	if metadata.Valid {
		if err := json.Unmarshal([]byte(metadata.String), &r.Metadata); err != nil {
			return nil, fmt.Errorf("session %q: metadata: %w", r.ID, err)
		}
	}
	if expiresAt.Valid {
		r.ExpiresAt = fromNanos(expiresAt.Int64)
	}
	r.CreatedAt = fromNanos(createdAt)
	r.UpdatedAt = fromNanos(updated)
	return &r, nil
}

// loadSession reads the row of a tenant's session. A missing session is
// ErrNotFound, and so is an expired one unless includeExpired.
func loadSession(ctx context.Context, q querier, tenant, id string, now time.Time, includeExpired bool) (*sessionRow, error) {
	r, err := scanSession(q.QueryRowContext(ctx, "SELECT "+sessionColumns+" FROM sessions WHERE tenant = ? AND id = ?", tenant, id))
	if errors.Is(err, sql.ErrNoRows) {
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

func notFound(id string) error {
	return fmt.Errorf("sqlite: session %q: %w", id, agentmem.ErrNotFound)
}

// Times are stored as nanoseconds since the Unix epoch and returned in UTC.
func toNanos(t time.Time) int64   { return t.UnixNano() }
func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }
func nullNanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

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

// insertSession inserts a session row.
func insertSession(ctx context.Context, tx querier, r *sessionRow) error {
	md, err := encodeMetadata(r.Metadata)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO sessions ("+sessionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Tenant, r.UserID, r.Agent, nullString(r.ParentID), r.ForkSeq, nullString(r.baseID), r.baseSeq,
		md, string(r.Retention), nullNanos(r.ExpiresAt), toNanos(r.CreatedAt), toNanos(r.UpdatedAt), r.LastSeq)
	return err
}

// segment is the part of a visible log that one session owns: its entries
// with lo < seq <= hi. Every segment of a log is in the session's tenant
// (a branch is in its parent's).
type segment struct {
	tenant, id string
	lo, hi     int64
}

// segments returns the parts of r's visible log, oldest first: the
// entries r inherited (from its base, its base's base...) and its own.
// Segments are disjoint ranges of sequence numbers in increasing order.
func segments(ctx context.Context, q querier, r *sessionRow) ([]segment, error) {
	var segs []segment
	id, lo, hi := r.ID, r.baseSeq, int64(math.MaxInt64)
	base := r.baseID
	for {
		if lo < hi {
			segs = append(segs, segment{tenant: r.Tenant, id: id, lo: lo, hi: hi})
		}
		if base == "" {
			break
		}
		if len(segs) > 10000 {
			return nil, fmt.Errorf("session %q: its chain of bases is too long or has a cycle", r.ID)
		}
		hi = min(hi, lo)
		var baseID sql.NullString
		var baseSeq int64
		err := q.QueryRowContext(ctx, "SELECT base_id, base_seq FROM sessions WHERE tenant = ? AND id = ?", r.Tenant, base).Scan(&baseID, &baseSeq)
		if err != nil {
			return nil, fmt.Errorf("session %q: base %q: %w", r.ID, base, err)
		}
		id, lo, base = base, baseSeq, baseID.String
	}
	for i, j := 0, len(segs)-1; i < j; i, j = i+1, j-1 {
		segs[i], segs[j] = segs[j], segs[i]
	}
	return segs, nil
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, req store.CreateRequest) (*store.Session, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := store.ValidateCreate(req); err != nil {
		return nil, err
	}
	now := s.now()
	var out *store.Session
	err := s.write(ctx, "create", func(tx querier) error {
		r := &sessionRow{}
		if req.ParentID != "" {
			parent, err := loadSession(ctx, tx, req.Tenant, req.ParentID, now, false)
			if err != nil {
				return err
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
		if r.baseID == "" {
			r.baseSeq = 0
		}
		var exists int
		err := tx.QueryRowContext(ctx, "SELECT 1 FROM sessions WHERE tenant = ? AND id = ?", r.Tenant, r.ID).Scan(&exists)
		if err == nil {
			return fmt.Errorf("sqlite: session %q already exists: %w", r.ID, agentmem.ErrConflict)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := insertSession(ctx, tx, r); err != nil {
			return err
		}
		out = r.Session.Clone()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, tenant, id string) (*store.Session, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := store.ValidateKey(tenant, id); err != nil {
		return nil, err
	}
	r, err := loadSession(ctx, s.r, tenant, id, s.now(), false)
	if err != nil {
		if isStoreErr(err) {
			return nil, err
		}
		return nil, s.dbErr("get", err)
	}
	return &r.Session, nil
}

// isStoreErr reports whether err is one of the contract's errors, which
// pass through unchanged.
func isStoreErr(err error) bool {
	return errors.Is(err, agentmem.ErrNotFound) || errors.Is(err, agentmem.ErrConflict) ||
		errors.Is(err, agentmem.ErrInvalid) || errors.Is(err, store.ErrClosed)
}

// write runs fn in a write transaction (BEGIN IMMEDIATE on the writer
// connection) and commits it if fn returns nil.
func (s *Store) write(ctx context.Context, op string, fn func(tx querier) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.dbErr(op, err)
	}
	defer s.wStmts.warm(ctx)
	if err := fn(cachedTx{tx, s.wStmts}); err != nil {
		tx.Rollback() //nolint:errcheck // the error that matters is fn's
		if isStoreErr(err) {
			return err
		}
		return s.dbErr(op, err)
	}
	if err := tx.Commit(); err != nil {
		return s.dbErr(op+": commit", err)
	}
	return nil
}

// read runs fn in a read transaction: one consistent snapshot of the
// database (WAL keeps it stable while writers commit).
func (s *Store) read(ctx context.Context, op string, fn func(tx querier) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: s.r != s.w})
	if err != nil {
		return s.dbErr(op, err)
	}
	defer s.rStmts.warm(ctx)
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to commit
	if err := fn(cachedTx{tx, s.rStmts}); err != nil {
		if isStoreErr(err) {
			return err
		}
		return s.dbErr(op, err)
	}
	return nil
}
