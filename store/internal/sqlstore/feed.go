package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storekit"
)

// The change feed (store.Feed) is the feed table, one row per change,
// written in the transaction that makes the change. On SQLite triggers
// write it (migrations 0002 and 0003). On PostgreSQL the store's own
// statements do (dialect.feedAppends and the others), since Citus cannot
// run triggers on sharded tables.
//
// The two order changes differently. SQLite serializes writers, so a
// row's AUTOINCREMENT position orders the changes as they were committed,
// and a change's watermark is its position. PostgreSQL's transactions
// commit in an order their positions do not follow. So a change is ordered
// by (xid, pos), the transaction that made it and then its position, and
// its watermark is its transaction's ID. A read returns only changes of
// transactions below its snapshot's xmin, all of which have ended. Through
// is that xmin when the read reached the end. FeedHead is the xmax of a new
// snapshot, since every transaction committed before it is below it.

// feedDialect is how one database orders and reads the feed.
type feedDialect struct {
	// bySnapshot: changes are ordered by (xid, pos) and read below the
	// snapshot's xmin, which snapshot returns (PostgreSQL); otherwise by
	// pos alone (SQLite).
	bySnapshot bool
	snapshot   string
	// read returns the changes after the cursor ($2 its Tx as text, $3 its
	// Pos), below the snapshot's watermark ($1, as text), at most $4 of them,
	// in order. Each comes with the entry of its append. The columns are tx,
	// pos, kind, session_id, tenant, seq, at, and the entry's kind, body and
	// created_at (NULL when it is gone). readKeys is read with NULL for the
	// entry's columns (FeedRequest.WithoutEntries).
	read, readKeys string
	// head is one past the newest watermark given out.
	head string
	// keysIn is the condition that a session's (tenant, id) is one of the
	// pairs of list parameters $1 (tenants) and $2 (IDs).
	keysIn string
	// loadCursor reads a consumer's ($1) cursor: tx, pos.
	loadCursor string
	// saveCursor saves a consumer's ($1) cursor ($2 its Tx as text, $3 its
	// Pos) unless the one saved is ahead.
	saveCursor string
	// dropCursor deletes a consumer's ($1) cursor.
	dropCursor string
	// oldestCursor reads the cursor furthest behind: tx (as text), pos.
	oldestCursor string
	// trim deletes the changes up to and including a cursor ($1 its Tx as
	// text, $2 its Pos).
	trim string
}

const (
	feedColumns = `f.kind, f.session_id, f.tenant, f.seq, f.at, e.kind, e.body, e.created_at
	FROM feed f LEFT JOIN entries e ON f.kind = 'append' AND e.tenant = f.tenant AND e.session_id = f.session_id AND e.seq = f.seq`
	// feedKeyColumns are feedColumns without the entries, typed as
	// theirs on PostgreSQL.
	sqliteFeedKeyColumns   = `f.kind, f.session_id, f.tenant, f.seq, f.at, NULL, NULL, NULL FROM feed f`
	postgresFeedKeyColumns = `f.kind, f.session_id, f.tenant, f.seq, f.at, NULL::text, NULL::bytea, NULL::timestamptz FROM feed f`
)

// The feed's reads after a cursor, with the columns of feedColumns or
// the feed key columns.
const (
	sqliteFeedAfter   = ` WHERE f.pos > $3 ORDER BY f.pos LIMIT $4`
	postgresFeedAfter = ` WHERE f.xid < $1::text::xid8 AND (f.xid, f.pos) > ($2::text::xid8, $3)
		ORDER BY f.xid, f.pos LIMIT $4`
)

var sqliteFeed = feedDialect{
	read:         `SELECT 0, f.pos, ` + feedColumns + sqliteFeedAfter,
	readKeys:     `SELECT 0, f.pos, ` + sqliteFeedKeyColumns + sqliteFeedAfter,
	head:         `SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'feed'), 0) + 1`,
	keysIn:       `(tenant, id) IN (SELECT t.value, i.value FROM json_each($1) t JOIN json_each($2) i ON i.key = t.key)`,
	loadCursor:   `SELECT 0, pos FROM feed_cursors WHERE consumer = $1`,
	saveCursor:   `INSERT INTO feed_cursors (consumer, pos) VALUES ($1, $3) ON CONFLICT (consumer) DO UPDATE SET pos = excluded.pos WHERE excluded.pos > feed_cursors.pos`,
	dropCursor:   `DELETE FROM feed_cursors WHERE consumer = $1`,
	oldestCursor: `SELECT '0', pos FROM feed_cursors ORDER BY pos LIMIT 1`,
	trim:         `DELETE FROM feed WHERE pos <= $2`,
}

var postgresFeed = feedDialect{
	bySnapshot: true,
	snapshot:   `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint`,
	read:       `SELECT f.xid::text::bigint, f.pos, ` + feedColumns + postgresFeedAfter,
	readKeys:   `SELECT f.xid::text::bigint, f.pos, ` + postgresFeedKeyColumns + postgresFeedAfter,
	head:       `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint`,
	keysIn:     `(tenant, id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
	loadCursor: `SELECT xid::text::bigint, pos FROM feed_cursors WHERE consumer = $1`,
	saveCursor: `INSERT INTO feed_cursors (consumer, xid, pos) VALUES ($1, $2::text::xid8, $3)
		ON CONFLICT (consumer) DO UPDATE SET xid = excluded.xid, pos = excluded.pos
		WHERE (excluded.xid, excluded.pos) > (feed_cursors.xid, feed_cursors.pos)`,
	// In two statements: on Citus, feed_cursors is a table of the
	// coordinator and feed is sharded.
	dropCursor:   `DELETE FROM feed_cursors WHERE consumer = $1`,
	oldestCursor: `SELECT xid::text, pos FROM feed_cursors ORDER BY xid, pos LIMIT 1`,
	trim:         `DELETE FROM feed WHERE (xid, pos) <= ($1::text::xid8, $2)`,
}

// ReadFeed implements store.Feed: the changes after req.After, with their
// sessions and (unless req.WithoutEntries) entries as they are now, read
// in one snapshot.
func (s *Store) ReadFeed(ctx context.Context, req store.FeedRequest) (*store.FeedResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	limit, err := store.ValidateFeed(req)
	if err != nil {
		return nil, err
	}
	f := &s.d.feed
	resp := &store.FeedResponse{Next: req.After}
	err = s.read(ctx, "read feed", func(tx sqldb.Tx) error {
		resp.Changes, resp.More, resp.Next = nil, false, req.After
		var snap int64
		if f.snapshot != "" {
			if err := tx.QueryRow(ctx, f.snapshot).Scan(&snap); err != nil {
				return err
			}
		}
		query := f.read
		if req.WithoutEntries {
			query = f.readKeys
		}
		rows, err := tx.Query(ctx, query, strconv.FormatInt(snap, 10), strconv.FormatInt(req.After.Tx, 10), req.After.Pos, limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		// Every column is set by each Scan. The body is the driver's own
		// buffer (RawBytes), valid until the next row: decodeEntry copies
		// what it keeps, so no copy of each body is made for the scan.
		var (
			xid, pos, seq int64
			kind, id, tn  string
			at, etime     time.Time
			ekind         sql.NullString
			body          []byte
			dest          = []any{&xid, &pos, &kind, &id, &tn, &seq, scanTime(&at), &ekind, s.d.RawBytes(&body), scanTime(&etime)}
		)
		for rows.Next() {
			if len(resp.Changes) == limit {
				resp.More = true
				break
			}
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			c := store.Change{Kind: store.ChangeKind(kind), SessionID: id, Tenant: tn, Seq: seq, Time: at}
			if ekind.Valid {
				e := &store.Entry{Seq: seq, Kind: store.EntryKind(ekind.String), Time: etime}
				if err := decodeEntry(e, body); err != nil {
					c.Err = fmt.Errorf("%s: session %q: %w", s.d.name, id, err)
				} else {
					c.Entry = e
				}
			}
			resp.Changes = append(resp.Changes, c)
			resp.Next = store.FeedCursor{Tx: xid, Pos: pos}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		switch {
		case f.bySnapshot && resp.More:
			// Every transaction before the last one read is done with.
			resp.Through = resp.Next.Tx
		case f.bySnapshot:
			resp.Through = snap
		case resp.More:
			resp.Through = resp.Next.Pos + 1
		default:
			// Every change so far, in this snapshot, is read (or trimmed).
			if err := tx.QueryRow(ctx, f.head).Scan(&resp.Through); err != nil {
				return err
			}
		}
		return s.feedSessions(ctx, tx, resp.Changes)
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// feedSessions sets the Session of the changes (storekit.AttachSessions),
// read in one query.
func (s *Store) feedSessions(ctx context.Context, tx sqldb.Tx, changes []store.Change) error {
	keys := storekit.FeedSessionKeys(changes)
	if len(keys) == 0 {
		return nil
	}
	tenants, ids := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		tenants[i], ids[i] = k.Tenant, k.ID
	}
	now := s.now()
	sessions := make(map[store.Key]*store.Session, len(keys))
	err := queryRows(ctx, tx, "SELECT "+sessionColumns+" FROM sessions WHERE "+s.d.feed.keysIn,
		[]any{s.d.strings(tenants), s.d.strings(ids)}, func(rows sqldb.Rows) error {
			r, err := ScanSession(rows)
			var d *agentmem.DamagedError
			if errors.As(err, &d) {
				// Its changes go on with what decodes: a consumer of
				// the log does not need the session's metadata.
				agentmem.ReportDamaged(ctx, d)
			} else if err != nil {
				return err
			}
			if !r.Expired(now) {
				sessions[r.Key()] = &r.Session
			}
			return nil
		})
	if err != nil {
		return err
	}
	storekit.AttachSessions(changes, sessions)
	return nil
}

// FeedHead implements store.Feed: one past the newest position given out
// (SQLite), or the xmax of a new snapshot, above every transaction that
// committed before it (PostgreSQL).
func (s *Store) FeedHead(ctx context.Context) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	var head int64
	if err := s.db.Reader().QueryRow(ctx, s.d.feed.head).Scan(&head); err != nil {
		return 0, s.err("feed head", err)
	}
	return head, nil
}

// LoadCursor implements store.Feed.
func (s *Store) LoadCursor(ctx context.Context, consumer string) (store.FeedCursor, error) {
	if err := s.checkOpen(); err != nil {
		return store.FeedCursor{}, err
	}
	var c store.FeedCursor
	err := s.db.Reader().QueryRow(ctx, s.d.feed.loadCursor, consumer).Scan(&c.Tx, &c.Pos)
	if errors.Is(err, sqldb.ErrNoRows) {
		return store.FeedCursor{}, nil
	}
	if err != nil {
		return store.FeedCursor{}, s.err("load cursor", err)
	}
	return c, nil
}

// SaveCursor implements store.Feed. In the same transaction it deletes
// the changes every consumer has read.
func (s *Store) SaveCursor(ctx context.Context, consumer string, c store.FeedCursor) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	f := &s.d.feed
	return s.write(ctx, "save cursor", func(tx sqldb.Tx) error {
		if _, err := tx.Exec(ctx, f.saveCursor, consumer, strconv.FormatInt(c.Tx, 10), c.Pos); err != nil {
			return err
		}
		return s.trimFeed(ctx, tx)
	})
}

// DropCursor implements store.Feed. In the same transaction it deletes
// the changes every remaining consumer has read.
func (s *Store) DropCursor(ctx context.Context, consumer string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	return s.write(ctx, "drop cursor", func(tx sqldb.Tx) error {
		n, err := tx.Exec(ctx, s.d.feed.dropCursor, consumer)
		if err != nil || n == 0 {
			return err
		}
		return s.trimFeed(ctx, tx)
	})
}

// trimFeed deletes the changes every consumer with a cursor has read
// (none when no consumer has one: a consumer yet to register may need
// them).
func (s *Store) trimFeed(ctx context.Context, tx sqldb.Tx) error {
	var xid string
	var pos int64
	err := tx.QueryRow(ctx, s.d.feed.oldestCursor).Scan(&xid, &pos)
	if errors.Is(err, sqldb.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, s.d.feed.trim, xid, pos)
	return err
}
