package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentmem/agentmem/store"
)

// The change feed (store.Feed) is the feed table, written by the
// statements that make each change (feedAppendSQL; see doc.go for why
// not by triggers, and how this holds on Citus). Changes are ordered by
// (xid, pos): the transaction that made them, then their position. A change's watermark
// is its transaction's ID: a read returns only changes of transactions
// below its snapshot's xmin, all of which have ended, so Through is that
// xmin when the read reached the end, and FeedHead is the xmax of a new
// snapshot (every transaction committed before it is below it).

var _ store.Feed = (*Store)(nil)

// feedAppendSQL starts the statement that records changes, followed by
// VALUES or a SELECT of (kind, session_id, tenant, seq). The xid is the
// column's default, pg_current_xact_id(): on Citus the coordinator
// evaluates it, so every change carries its coordinator transaction's ID.
const feedAppendSQL = `INSERT INTO feed (kind, session_id, tenant, seq)`

// ReadFeed implements store.Feed: the changes after req.After, with their
// sessions and entries as they are now, read in one snapshot.
func (s *Store) ReadFeed(ctx context.Context, req store.FeedRequest) (*store.FeedResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	limit, err := store.ValidateFeed(req)
	if err != nil {
		return nil, err
	}
	resp := &store.FeedResponse{Next: req.After}
	err = s.read(ctx, "read feed", func(tx pgx.Tx) error {
		var xmin int64
		if err := tx.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint`).Scan(&xmin); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT f.xid::text::bigint, f.pos, f.kind, f.session_id, f.tenant, f.seq, f.at, e.kind, e.body, e.created_at
			FROM feed f LEFT JOIN entries e ON f.kind = 'append' AND e.tenant = f.tenant AND e.session_id = f.session_id AND e.seq = f.seq
			WHERE f.xid < $1::text::xid8 AND (f.xid, f.pos) > ($2::text::xid8, $3)
			ORDER BY f.xid, f.pos LIMIT $4`,
			strconv.FormatInt(xmin, 10), strconv.FormatInt(req.After.Tx, 10), req.After.Pos, limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if len(resp.Changes) == limit {
				resp.More = true
				break
			}
			var (
				xid, pos, seq int64
				kind, id, tn  string
				at            time.Time
				ekind         *string
				body          []byte
				etime         *time.Time
			)
			if err := rows.Scan(&xid, &pos, &kind, &id, &tn, &seq, &at, &ekind, &body, &etime); err != nil {
				return err
			}
			c := store.Change{Kind: store.ChangeKind(kind), SessionID: id, Tenant: tn, Seq: seq, Time: at.UTC()}
			if ekind != nil && etime != nil {
				e, err := decodeEntry(seq, *ekind, body, *etime)
				if err != nil {
					c.Err = fmt.Errorf("postgres: session %q: %w", id, err)
				} else {
					c.Entry = &e
				}
			}
			resp.Changes = append(resp.Changes, c)
			resp.Next = store.FeedCursor{Tx: xid, Pos: pos}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		resp.Through = xmin
		if resp.More {
			// Every transaction before the last one read is done with.
			resp.Through = resp.Next.Tx
		}
		return s.feedSessions(ctx, tx, resp.Changes)
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// feedSessions sets the Session of the changes (store.AttachSessions),
// read in one query.
func (s *Store) feedSessions(ctx context.Context, tx pgx.Tx, changes []store.Change) error {
	keys := store.FeedSessionKeys(changes)
	if len(keys) == 0 {
		return nil
	}
	tenants, ids := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		tenants[i], ids[i] = k.Tenant, k.ID
	}
	rows, err := tx.Query(ctx, "SELECT "+sessionColumns+` FROM sessions
		WHERE (tenant, id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, tenants, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	now := s.now()
	sessions := make(map[store.Key]*store.Session, len(keys))
	for rows.Next() {
		r, err := scanSession(rows)
		if err != nil {
			return err
		}
		if !r.Expired(now) {
			sessions[r.Key()] = &r.Session
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	store.AttachSessions(changes, sessions)
	return nil
}

// FeedHead implements store.Feed: the xmax of a new snapshot, above every
// transaction that committed before it.
func (s *Store) FeedHead(ctx context.Context) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	var head int64
	err := s.pool.QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&head)
	if err != nil {
		return 0, s.dbErr("feed head", err)
	}
	return head, nil
}

// LoadCursor implements store.Feed.
func (s *Store) LoadCursor(ctx context.Context, consumer string) (store.FeedCursor, error) {
	if err := s.checkOpen(); err != nil {
		return store.FeedCursor{}, err
	}
	if err := store.ValidateConsumer(consumer); err != nil {
		return store.FeedCursor{}, err
	}
	var c store.FeedCursor
	err := s.pool.QueryRow(ctx, `SELECT xid::text::bigint, pos FROM feed_cursors WHERE consumer = $1`, consumer).Scan(&c.Tx, &c.Pos)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.FeedCursor{}, nil
	}
	if err != nil {
		return store.FeedCursor{}, s.dbErr("load cursor", err)
	}
	return c, nil
}

// SaveCursor implements store.Feed. In the same transaction it deletes
// the changes every consumer has read.
func (s *Store) SaveCursor(ctx context.Context, consumer string, c store.FeedCursor) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := store.ValidateSaveCursor(consumer, c); err != nil {
		return err
	}
	return s.write(ctx, "save cursor", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO feed_cursors (consumer, xid, pos) VALUES ($1, $2::text::xid8, $3)
			ON CONFLICT (consumer) DO UPDATE SET xid = excluded.xid, pos = excluded.pos
			WHERE (excluded.xid, excluded.pos) > (feed_cursors.xid, feed_cursors.pos)`,
			consumer, strconv.FormatInt(c.Tx, 10), c.Pos); err != nil {
			return err
		}
		// In two statements: on Citus, feed_cursors is a table of the
		// coordinator and feed is sharded.
		var xid string
		var pos int64
		if err := tx.QueryRow(ctx, `SELECT xid::text, pos FROM feed_cursors ORDER BY xid, pos LIMIT 1`).Scan(&xid, &pos); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM feed WHERE (xid, pos) <= ($1::text::xid8, $2)`, xid, pos)
		return err
	})
}
