package sqlite

import (
	"context"
	"strings"

	"github.com/agentmem/agentmem/store"
)

// List implements store.Store: sessions newest first (CreatedAt, then ID,
// then tenant, descending), expired ones left out. Each filter uses its own index, in
// List's order, so a page costs its size, not the number of sessions.
func (s *Store) List(ctx context.Context, req store.ListRequest) (*store.ListResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	size, after, err := store.ValidateList(req)
	if err != nil {
		return nil, err
	}
	now := s.now()
	var where []string
	var args []any
	for _, f := range []struct{ col, v string }{{"tenant", req.Tenant}, {"user_id", req.UserID}, {"agent", req.Agent}} {
		if f.v != "" {
			where = append(where, f.col+" = ?")
			args = append(args, f.v)
		}
	}
	where = append(where, "(expires_at IS NULL OR expires_at > ? OR retention = 'persistent')")
	args = append(args, toNanos(now))
	if after != nil {
		t := toNanos(after.CreatedAt)
		where = append(where, "(created_at < ? OR (created_at = ? AND (id < ? OR (id = ? AND tenant < ?))))")
		args = append(args, t, t, after.ID, after.ID, after.Tenant)
	}
	// One more than a page tells whether there is a next one.
	args = append(args, size+1)
	query := "SELECT " + sessionColumns + " FROM sessions WHERE " + strings.Join(where, " AND ") +
		" ORDER BY created_at DESC, id DESC, tenant DESC LIMIT ?"

	resp := &store.ListResponse{}
	err = s.read(ctx, "list", func(tx querier) error {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanSession(rows)
			if err != nil {
				return err
			}
			resp.Sessions = append(resp.Sessions, &r.Session)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	if len(resp.Sessions) > size {
		resp.Sessions = resp.Sessions[:size]
		last := resp.Sessions[size-1]
		resp.NextPageToken = store.EncodePageToken(store.Cursor{CreatedAt: last.CreatedAt, ID: last.ID, Tenant: last.Tenant})
	}
	return resp, nil
}
