package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache keeps the statements of one *sql.DB prepared: SQLite parses
// and plans a statement in about as much time as a small insert takes to
// run, so preparing each one once instead of per use saves a large share
// of an append's CPU time, which is what bounds group-committed appends.
//
// A statement is prepared on the database (database/sql then prepares it
// on each connection that uses it, once). That takes a connection, so it
// cannot happen inside a transaction: the write pool has one connection,
// which the transaction holds. A query that is not prepared yet runs
// unprepared inside its transaction and is noted; warm, called when the
// transaction is over, prepares the noted ones for next time.
type stmtCache struct {
	db     *sql.DB
	mu     sync.Mutex
	m      map[string]*sql.Stmt
	missed map[string]bool
	closed bool
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, m: map[string]*sql.Stmt{}, missed: map[string]bool{}}
}

// get returns the prepared statement for query, or nil (and notes query
// for warm).
func (c *stmtCache) get(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.m[query]
	if st == nil && !c.closed {
		c.missed[query] = true
	}
	return st
}

// warm prepares the statements get missed. The caller must hold no
// connection of the database (no open transaction).
func (c *stmtCache) warm(ctx context.Context) {
	c.mu.Lock()
	if len(c.missed) == 0 || c.closed {
		c.mu.Unlock()
		return
	}
	var queries []string
	for q := range c.missed {
		queries = append(queries, q)
	}
	clear(c.missed)
	c.mu.Unlock()
	for _, q := range queries {
		st, err := c.db.PrepareContext(ctx, q)
		if err != nil {
			continue // it will be prepared by each use instead
		}
		c.mu.Lock()
		if c.m[q] == nil && !c.closed {
			c.m[q] = st
			st = nil
		}
		c.mu.Unlock()
		if st != nil {
			st.Close()
		}
	}
}

// close closes the prepared statements.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for q, st := range c.m {
		st.Close()
		delete(c.m, q)
	}
}

// prepare returns the prepared statement for query, preparing it now if
// it is not yet, or nil if that fails. The caller must hold no connection
// of the database.
func (c *stmtCache) prepare(ctx context.Context, query string) *sql.Stmt {
	c.mu.Lock()
	st, closed := c.m[query], c.closed
	c.mu.Unlock()
	if st != nil || closed {
		return st
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil // it runs unprepared instead
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

// cachedDB runs statements outside a transaction with the statements of
// a stmtCache, preparing each the first time it runs. It implements
// sqldb.SQLConn.
type cachedDB struct {
	db *sql.DB
	c  *stmtCache
}

// ExecContext implements sqldb.SQLConn.
func (d cachedDB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := d.c.prepare(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return d.db.ExecContext(ctx, query, args...)
}

// QueryContext implements sqldb.SQLConn.
func (d cachedDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := d.c.prepare(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return d.db.QueryContext(ctx, query, args...)
}

// QueryRowContext implements sqldb.SQLConn.
func (d cachedDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := d.c.prepare(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return d.db.QueryRowContext(ctx, query, args...)
}

// cachedTx is a transaction that uses the statements of a stmtCache. It
// implements sqldb.SQLConn.
type cachedTx struct {
	tx *sql.Tx
	c  *stmtCache
}

// ExecContext implements sqldb.SQLConn.
func (t cachedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.c.get(query); st != nil {
		return t.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

// QueryContext implements sqldb.SQLConn.
func (t cachedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.c.get(query); st != nil {
		return t.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

// QueryRowContext implements sqldb.SQLConn.
func (t cachedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.c.get(query); st != nil {
		return t.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}
