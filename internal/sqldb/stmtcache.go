package sqldb

import (
	"context"
	"database/sql"
	"sync"
)

// MaxStmts bounds the statements a StmtCache or a Prepared keeps. A
// backend's statements are a few dozen constant strings. Those built at
// run time (a placeholder per argument) past the bound are prepared at
// each use.
const MaxStmts = 256

// stmtCache keeps statements prepared on SQLite's one write connection,
// for its write transactions to reuse. Preparing a statement (parsing and
// planning its SQL) otherwise costs a large part of a small write.
//
// A statement cannot be prepared on the connection while a transaction
// holds it, and the pool has one. So a transaction that meets a statement
// it has not prepared yet runs it the ordinary way and records it. warm
// prepares the recorded ones once the transaction has ended.
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

// get returns the prepared statement of query, or nil (recording the
// miss).
func (c *stmtCache) get(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.m[query]
	if st == nil && !c.closed && len(c.m)+len(c.missed) < MaxStmts {
		c.missed[query] = true
	}
	return st
}

// warm prepares the statements missed since the last warm. A statement
// that fails to prepare is left to be prepared at each use.
func (c *stmtCache) warm(ctx context.Context) {
	c.mu.Lock()
	if len(c.missed) == 0 || c.closed {
		c.mu.Unlock()
		return
	}
	queries := make([]string, 0, len(c.missed))
	for q := range c.missed {
		queries = append(queries, q)
	}
	clear(c.missed)
	c.mu.Unlock()
	for _, q := range queries {
		st, err := c.db.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		c.mu.Lock()
		if c.m[q] == nil && !c.closed {
			c.m[q], st = st, nil
		}
		c.mu.Unlock()
		if st != nil {
			st.Close()
		}
	}
}

// close closes the statements; get returns nil after it.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for q, st := range c.m {
		st.Close()
		delete(c.m, q)
	}
}

// cachedTx is a write transaction's Querier that uses the cache's
// statements.
type cachedTx struct {
	tx *sql.Tx
	c  *stmtCache
}

func (t cachedTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	query = rebind(query)
	if st := t.c.get(query); st != nil {
		return rowsAffected(t.tx.StmtContext(ctx, st).ExecContext(ctx, args...))
	}
	return rowsAffected(t.tx.ExecContext(ctx, query, args...))
}

func (t cachedTx) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	query = rebind(query)
	var rows *sql.Rows
	var err error
	if st := t.c.get(query); st != nil {
		rows, err = t.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	} else {
		rows, err = t.tx.QueryContext(ctx, query, args...)
	}
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (t cachedTx) QueryRow(ctx context.Context, query string, args ...any) Row {
	query = rebind(query)
	if st := t.c.get(query); st != nil {
		return sqlRow{t.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)}
	}
	return sqlRow{t.tx.QueryRowContext(ctx, query, args...)}
}
