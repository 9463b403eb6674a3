package sqldb

import (
	"context"
	"database/sql"
)

// StmtCache keeps the statements of a database/sql pool of a SQLite
// database prepared. It is for a component that runs its own transactions
// rather than Write's and Read's, such as the session store's group
// committer of appends and its reads. It is also for the writes of
// sqlitedb.SQLDB. Its Queriers rewrite $N placeholders as
// NewSQLiteQuerier's do.
type StmtCache struct{ c *stmtCache }

// NewStmtCache returns a cache of statements prepared on db. Close closes
// them (not db).
func NewStmtCache(db *sql.DB) *StmtCache { return &StmtCache{newStmtCache(db)} }

// Tx returns a Querier of tx, a transaction of the cache's pool. It runs
// the statements the cache has prepared and records the others for Warm.
func (c *StmtCache) Tx(tx *sql.Tx) Querier { return cachedTx{tx, c.c} }

// DB returns a Querier that runs statements outside a transaction,
// preparing each the first time it runs. Its caller must hold no
// connection of the pool that the preparing would wait for (on a pool of
// one connection, no transaction).
func (c *StmtCache) DB() Querier { return cachedDB{c.c} }

// Warm prepares the statements Tx's Queriers met unprepared since the
// last Warm. The caller must hold no connection of the pool (no
// transaction).
func (c *StmtCache) Warm(ctx context.Context) { c.c.warm(ctx) }

// Close closes the prepared statements; the Queriers then run statements
// unprepared.
func (c *StmtCache) Close() { c.c.close() }

// Len is how many prepared statements the cache keeps.
func (c *StmtCache) Len() int {
	c.c.mu.Lock()
	defer c.c.mu.Unlock()
	return len(c.c.m)
}

// prepare returns the prepared statement of query, preparing it now if it
// is not yet (within the cache's bound). Otherwise it returns nil, and the
// statement then runs unprepared.
func (c *stmtCache) prepare(ctx context.Context, query string) *sql.Stmt {
	c.mu.Lock()
	st, full := c.m[query], c.closed || len(c.m) >= MaxStmts
	c.mu.Unlock()
	if st != nil || full {
		return st
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev := c.m[query]; prev != nil || c.closed {
		st.Close()
		return prev
	}
	c.m[query] = st
	return st
}

// cachedDB is StmtCache.DB's Querier.
type cachedDB struct{ c *stmtCache }

func (d cachedDB) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	query = rebind(query)
	if st := d.c.prepare(ctx, query); st != nil {
		return rowsAffected(st.ExecContext(ctx, args...))
	}
	return rowsAffected(d.c.db.ExecContext(ctx, query, args...))
}

func (d cachedDB) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	query = rebind(query)
	var rows *sql.Rows
	var err error
	if st := d.c.prepare(ctx, query); st != nil {
		rows, err = st.QueryContext(ctx, args...)
	} else {
		rows, err = d.c.db.QueryContext(ctx, query, args...)
	}
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (d cachedDB) QueryRow(ctx context.Context, query string, args ...any) Row {
	query = rebind(query)
	if st := d.c.prepare(ctx, query); st != nil {
		return sqlRow{st.QueryRowContext(ctx, args...)}
	}
	return sqlRow{d.c.db.QueryRowContext(ctx, query, args...)}
}
