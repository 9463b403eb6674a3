package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentmem/agentmem/store"
)

// The change feed (store.Feed) is the feed table, written by triggers
// (migrations/0002_feed.sql): SQLite serializes writers, so its
// AUTOINCREMENT position orders the changes as they were committed, and a
// change's watermark is its position.

var _ store.Feed = (*Store)(nil)

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
	err = s.read(ctx, "read feed", func(tx querier) error {
		rows, err := tx.QueryContext(ctx, `SELECT f.pos, f.kind, f.session_id, f.tenant, f.seq, f.at, e.kind, e.body, e.created_at
			FROM feed f LEFT JOIN entries e ON f.kind = 'append' AND e.tenant = f.tenant AND e.session_id = f.session_id AND e.seq = f.seq
			WHERE f.pos > ? ORDER BY f.pos LIMIT ?`, req.After.Pos, limit+1)
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
				pos, seq, at int64
				kind, id, tn string
				ekind        sql.NullString
				body         []byte
				etime        sql.NullInt64
			)
			if err := rows.Scan(&pos, &kind, &id, &tn, &seq, &at, &ekind, &body, &etime); err != nil {
				return err
			}
			c := store.Change{Kind: store.ChangeKind(kind), SessionID: id, Tenant: tn, Seq: seq, Time: fromNanos(at)}
			if ekind.Valid {
				e := &store.Entry{Seq: seq, Kind: store.EntryKind(ekind.String), Time: fromNanos(etime.Int64)}
				if err := decodeEntry(e, body); err != nil {
					c.Err = fmt.Errorf("sqlite: session %q: %w", id, err)
				} else {
					c.Entry = e
				}
			}
			resp.Changes = append(resp.Changes, c)
			resp.Next = store.FeedCursor{Pos: pos}
		}
		if err := rows.Close(); err != nil {
			return err
		}
		resp.Through = resp.Next.Pos + 1
		if !resp.More {
			// Every change so far, in this snapshot, is read (or trimmed).
			if err := tx.QueryRowContext(ctx, feedHead).Scan(&resp.Through); err != nil {
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

// feedSessions sets the Session of the changes (store.AttachSessions),
// read in one query.
func (s *Store) feedSessions(ctx context.Context, tx querier, changes []store.Change) error {
	keys := store.FeedSessionKeys(changes)
	if len(keys) == 0 {
		return nil
	}
	pairs := make([][2]string, len(keys))
	for i, k := range keys {
		pairs[i] = [2]string{k.Tenant, k.ID}
	}
	list, err := json.Marshal(pairs)
	if err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, "SELECT "+sessionColumns+` FROM sessions
		WHERE (tenant, id) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))`, string(list))
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

// feedHead is one past the newest position ever given out.
const feedHead = `SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'feed'), 0) + 1`

// FeedHead implements store.Feed: one past the newest position ever
// given out.
func (s *Store) FeedHead(ctx context.Context) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	var head int64
	err := s.read(ctx, "feed head", func(tx querier) error {
		return tx.QueryRowContext(ctx, feedHead).Scan(&head)
	})
	return head, err
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
	err := s.read(ctx, "load cursor", func(tx querier) error {
		err := tx.QueryRowContext(ctx, `SELECT pos FROM feed_cursors WHERE consumer = ?`, consumer).Scan(&c.Pos)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	return c, err
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
	return s.write(ctx, "save cursor", func(tx querier) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO feed_cursors (consumer, pos) VALUES (?, ?)
			ON CONFLICT (consumer) DO UPDATE SET pos = excluded.pos WHERE excluded.pos > feed_cursors.pos`, consumer, c.Pos); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM feed WHERE pos <= (SELECT min(pos) FROM feed_cursors)`)
		return err
	})
}
