// Package sqlblocks is the blocks.Store of the SQL backends, written once
// over internal/sqldb: the compare-and-set write with its history, the
// reads and the mapping of errors. blocks/sqlite and blocks/postgres open
// their database, run their own migrations and wrap a Store.
//
// Nothing differs between the databases but what sqldb hides: a Put is
// one write transaction whose UPDATE (or INSERT ... ON CONFLICT DO
// NOTHING, for a new block) changes a row only if the block is still at
// the version read, and which writes the history in the same
// transaction. On PostgreSQL a concurrent writer waits for the row's lock
// and then finds the version moved; SQLite's single writer serializes
// them.
package sqlblocks

import (
	"context"
	"errors"
	"slices"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/internal/sqldb"
)

// Store is a blocks.Store over a sqldb.DB whose blocks tables are
// migrated. It is safe for concurrent use.
type Store struct {
	g *sqldb.Guard
	d *sqldb.Dialect
	// r runs the reads as statements kept prepared: every context reads
	// its session's blocks, and on SQLite parsing the query cost more
	// than running it.
	r *sqldb.Prepared
}

var (
	_ blocks.Store    = (*Store)(nil)
	_ blocks.Lister   = (*Store)(nil)
	_ blocks.Importer = (*Store)(nil)
)

// New returns a Store over db, which it closes on Close. Its errors name
// it "blocks/" and the dialect ("blocks/sqlite").
func New(db sqldb.DB) *Store {
	d := db.Dialect()
	return &Store{g: sqldb.NewGuard(db, "blocks/"+d.Name, blocks.ErrClosed), d: d, r: sqldb.NewPrepared(db)}
}

// Close closes the database; later calls fail with blocks.ErrClosed.
func (s *Store) Close() error {
	s.r.Close()
	return s.g.Close()
}

// columns are the blocks columns, in the order scan reads them.
const columns = `tenant, owner_kind, owner_id, label, value, char_limit, description, read_only, version, created_at, updated_at, updated_by`

// keyWhere selects one block by its key, as $1 to $4.
const keyWhere = `tenant = $1 AND owner_kind = $2 AND owner_id = $3 AND label = $4`

func keyArgs(k blocks.Key) []any { return []any{k.Tenant, string(k.Owner.Kind), k.Owner.ID, k.Label} }

func (s *Store) scan(r sqldb.Row) (blocks.Block, error) {
	var (
		b        blocks.Block
		kind     string
		readOnly int
	)
	err := r.Scan(&b.Tenant, &kind, &b.Owner.ID, &b.Label, &b.Value, &b.Limit, &b.Description, &readOnly, &b.Version,
		s.d.ScanTime(&b.CreatedAt), s.d.ScanTime(&b.UpdatedAt), &b.UpdatedBy)
	b.Owner.Kind, b.ReadOnly = blocks.OwnerKind(kind), readOnly != 0
	return b, err
}

// Get implements blocks.Store.
func (s *Store) Get(ctx context.Context, k blocks.Key) (blocks.Block, error) {
	if err := s.g.Closed("get"); err != nil {
		return blocks.Block{}, err
	}
	b, err := s.scan(s.r.QueryRow(ctx, `SELECT `+columns+` FROM blocks WHERE `+keyWhere, keyArgs(k)...))
	if errors.Is(err, sqldb.ErrNoRows) {
		return blocks.Block{}, blocks.NotFound(k)
	}
	if err != nil {
		return blocks.Block{}, s.g.Err("get", err)
	}
	return b, nil
}

// List implements blocks.Store.
func (s *Store) List(ctx context.Context, tenant string, owner blocks.Owner) ([]blocks.Block, error) {
	if err := s.g.Closed("list"); err != nil {
		return nil, err
	}
	rows, err := s.r.Query(ctx, `SELECT `+columns+` FROM blocks WHERE tenant = $1 AND owner_kind = $2 AND owner_id = $3`,
		tenant, string(owner.Kind), owner.ID)
	if err != nil {
		return nil, s.g.Err("list", err)
	}
	defer rows.Close()
	var out []blocks.Block
	for rows.Next() {
		b, err := s.scan(rows)
		if err != nil {
			return nil, s.g.Err("list", err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, s.g.Err("list", err)
	}
	// Sorted here rather than by the database, whose collation may not
	// order labels bytewise.
	blocks.SortBlocks(out)
	return out, nil
}

// Put implements blocks.Store.
func (s *Store) Put(ctx context.Context, b blocks.Block, c blocks.Change) error {
	if err := blocks.CheckPut(b, c); err != nil {
		return err
	}
	if err := s.g.Closed("put"); err != nil {
		return err
	}
	readOnly := 0
	if b.ReadOnly {
		readOnly = 1
	}
	err := s.g.Write(ctx, func(ctx context.Context, tx sqldb.Tx) error {
		var (
			n   int64
			err error
		)
		if b.Version == 1 {
			n, err = tx.Exec(ctx, `INSERT INTO blocks (`+columns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT DO NOTHING`,
				b.Tenant, string(b.Owner.Kind), b.Owner.ID, b.Label, b.Value, b.Limit, b.Description, readOnly, b.Version,
				s.d.Time(b.CreatedAt), s.d.Time(b.UpdatedAt), b.UpdatedBy)
		} else {
			n, err = tx.Exec(ctx, `UPDATE blocks SET value = $5, char_limit = $6, description = $7, read_only = $8, version = $9,
				created_at = $10, updated_at = $11, updated_by = $12 WHERE `+keyWhere+` AND version = $13`,
				b.Tenant, string(b.Owner.Kind), b.Owner.ID, b.Label, b.Value, b.Limit, b.Description, readOnly, b.Version,
				s.d.Time(b.CreatedAt), s.d.Time(b.UpdatedAt), b.UpdatedBy, b.Version-1)
		}
		if err != nil {
			return err
		}
		if n != 1 {
			return blocks.ErrStale
		}
		args := append(keyArgs(b.Key), c.Version, string(c.Action), c.By, s.d.Time(c.At), c.Before, c.After)
		return sqldb.ExecAll(ctx, tx, []sqldb.Stmt{
			{SQL: `INSERT INTO blocks_history (tenant, owner_kind, owner_id, label, version, action, by_whom, at, before_value, after_value)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, Args: args},
			{SQL: `DELETE FROM blocks_history WHERE ` + keyWhere + ` AND version <= $5`, Args: append(keyArgs(b.Key), b.Version-blocks.MaxHistory)},
		})
	})
	if errors.Is(err, blocks.ErrStale) {
		return err
	}
	if err != nil {
		return s.g.Err("put", err)
	}
	return nil
}

// ImportBlock implements blocks.Importer: in one write transaction, the
// block's row, inserted only if its key is free, and its history.
func (s *Store) ImportBlock(ctx context.Context, b blocks.Block, history []blocks.Change) error {
	if err := blocks.CheckImport(b, history); err != nil {
		return err
	}
	if err := s.g.Closed("import"); err != nil {
		return err
	}
	readOnly := 0
	if b.ReadOnly {
		readOnly = 1
	}
	conflict := blocks.ConflictError(b.Key)
	err := s.g.Write(ctx, func(ctx context.Context, tx sqldb.Tx) error {
		n, err := tx.Exec(ctx, `INSERT INTO blocks (`+columns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT DO NOTHING`,
			b.Tenant, string(b.Owner.Kind), b.Owner.ID, b.Label, b.Value, b.Limit, b.Description, readOnly, b.Version,
			s.d.Time(b.CreatedAt), s.d.Time(b.UpdatedAt), b.UpdatedBy)
		if err != nil {
			return err
		}
		if n != 1 {
			return conflict
		}
		// A block without a row has no history; this makes sure of it.
		stmts := []sqldb.Stmt{{SQL: `DELETE FROM blocks_history WHERE ` + keyWhere, Args: keyArgs(b.Key)}}
		for _, c := range history {
			stmts = append(stmts, sqldb.Stmt{SQL: `INSERT INTO blocks_history (tenant, owner_kind, owner_id, label, version, action, by_whom, at, before_value, after_value)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, Args: append(keyArgs(b.Key), c.Version, string(c.Action), c.By, s.d.Time(c.At), c.Before, c.After)})
		}
		return sqldb.ExecAll(ctx, tx, stmts)
	})
	if errors.Is(err, conflict) {
		return conflict
	}
	if err != nil {
		return s.g.Err("import", err)
	}
	return nil
}

// Tenants implements blocks.Lister.
func (s *Store) Tenants(ctx context.Context) ([]string, error) {
	var out []string
	err := s.each(ctx, "tenants", `SELECT DISTINCT tenant FROM blocks`, nil, func(r sqldb.Row) error {
		var t string
		err := r.Scan(&t)
		out = append(out, t)
		return err
	})
	if err != nil {
		return nil, err
	}
	// Sorted here rather than by the database, whose collation may not
	// order them bytewise.
	slices.Sort(out)
	return out, nil
}

// Owners implements blocks.Lister.
func (s *Store) Owners(ctx context.Context, tenant string) ([]blocks.Owner, error) {
	var out []blocks.Owner
	err := s.each(ctx, "owners", `SELECT DISTINCT owner_kind, owner_id FROM blocks WHERE tenant = $1`, []any{tenant}, func(r sqldb.Row) error {
		var (
			o    blocks.Owner
			kind string
		)
		err := r.Scan(&kind, &o.ID)
		o.Kind = blocks.OwnerKind(kind)
		out = append(out, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	blocks.SortOwners(out)
	return out, nil
}

// each runs a query and calls fn with each of its rows.
func (s *Store) each(ctx context.Context, op, query string, args []any, fn func(sqldb.Row) error) error {
	if err := s.g.Closed(op); err != nil {
		return err
	}
	rows, err := s.g.Reader().Query(ctx, query, args...)
	if err != nil {
		return s.g.Err(op, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return s.g.Err(op, err)
		}
	}
	if err := rows.Err(); err != nil {
		return s.g.Err(op, err)
	}
	return nil
}

// Delete implements blocks.Store.
func (s *Store) Delete(ctx context.Context, k blocks.Key, version int64) error {
	if err := s.g.Closed("delete"); err != nil {
		return err
	}
	err := s.g.Write(ctx, func(ctx context.Context, tx sqldb.Tx) error {
		n, err := tx.Exec(ctx, `DELETE FROM blocks WHERE `+keyWhere+` AND version = $5`, append(keyArgs(k), version)...)
		if err != nil {
			return err
		}
		if n != 1 {
			var v int64
			err := tx.QueryRow(ctx, `SELECT version FROM blocks WHERE `+keyWhere, keyArgs(k)...).Scan(&v)
			if errors.Is(err, sqldb.ErrNoRows) {
				return blocks.NotFound(k)
			}
			if err != nil {
				return err
			}
			return blocks.ErrStale
		}
		_, err = tx.Exec(ctx, `DELETE FROM blocks_history WHERE `+keyWhere, keyArgs(k)...)
		return err
	})
	if errors.Is(err, blocks.ErrStale) || errors.Is(err, agentmem.ErrNotFound) {
		return err
	}
	if err != nil {
		return s.g.Err("delete", err)
	}
	return nil
}

// DeleteOwner implements blocks.Store.
func (s *Store) DeleteOwner(ctx context.Context, tenant string, owner blocks.Owner) error {
	if err := s.g.Closed("delete_owner"); err != nil {
		return err
	}
	where := ` WHERE tenant = $1 AND owner_kind = $2 AND owner_id = $3`
	args := []any{tenant, string(owner.Kind), owner.ID}
	err := s.g.Write(ctx, func(ctx context.Context, tx sqldb.Tx) error {
		return sqldb.ExecAll(ctx, tx, []sqldb.Stmt{{SQL: `DELETE FROM blocks` + where, Args: args}, {SQL: `DELETE FROM blocks_history` + where, Args: args}})
	})
	if err != nil {
		return s.g.Err("delete_owner", err)
	}
	return nil
}

// History implements blocks.Store.
func (s *Store) History(ctx context.Context, k blocks.Key) ([]blocks.Change, error) {
	if err := s.g.Closed("history"); err != nil {
		return nil, err
	}
	rows, err := s.r.Query(ctx, `SELECT version, action, by_whom, at, before_value, after_value
		FROM blocks_history WHERE `+keyWhere+` ORDER BY version`, keyArgs(k)...)
	if err != nil {
		return nil, s.g.Err("history", err)
	}
	defer rows.Close()
	var out []blocks.Change
	for rows.Next() {
		var (
			c      blocks.Change
			action string
		)
		if err := rows.Scan(&c.Version, &action, &c.By, s.d.ScanTime(&c.At), &c.Before, &c.After); err != nil {
			return nil, s.g.Err("history", err)
		}
		c.Action = blocks.Action(action)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.g.Err("history", err)
	}
	return out, nil
}
