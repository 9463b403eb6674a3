package sqldb

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
)

// Prepared is a Querier over a DB's reader that runs each query as a
// prepared statement, prepared on its first use and kept. On SQLite,
// parsing and planning a query costs as much as running a small one, and
// database/sql prepares it again at every call. On PostgreSQL it is the
// reader itself, since pgx keeps each connection's prepared statements.
//
// Queries built at run time could make the statements grow without end. So
// past MaxStmts of them (as for the write statements, stmtCache) a new
// query runs unprepared.
type Prepared struct {
	Querier
	db    *sql.DB // nil: no statements kept
	stmts sync.Map
	count atomic.Int64
}

// SQLReader is a DB whose reads run on a database/sql pool of a SQLite
// database (sqlitedb.SQLDB). A Prepared keeps its statements prepared on
// that pool.
type SQLReader interface {
	DB
	// ReadPool is the pool of the DB's Reader.
	ReadPool() *sql.DB
}

// NewPrepared returns a Prepared over db's reader. Close it before db.
func NewPrepared(db DB) *Prepared {
	p := &Prepared{Querier: db.Reader()}
	if s, ok := db.(SQLReader); ok {
		p.db = s.ReadPool()
	}
	return p
}

// stmt returns the prepared statement of query, preparing it if needed;
// nil when no more are kept.
func (p *Prepared) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := p.stmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	if p.count.Load() >= MaxStmts {
		return nil, nil
	}
	st, err := p.db.PrepareContext(ctx, rebind(query))
	if err != nil {
		return nil, err
	}
	if prev, loaded := p.stmts.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	p.count.Add(1)
	return st, nil
}

// Exec implements Querier.
func (p *Prepared) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	if p.db == nil {
		return p.Querier.Exec(ctx, query, args...)
	}
	st, err := p.stmt(ctx, query)
	switch {
	case err != nil:
		return 0, err
	case st == nil:
		return p.Querier.Exec(ctx, query, args...)
	}
	res, err := st.ExecContext(ctx, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Query implements Querier.
func (p *Prepared) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	if p.db == nil {
		return p.Querier.Query(ctx, query, args...)
	}
	st, err := p.stmt(ctx, query)
	switch {
	case err != nil:
		return nil, err
	case st == nil:
		return p.Querier.Query(ctx, query, args...)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

// QueryRow implements Querier.
func (p *Prepared) QueryRow(ctx context.Context, query string, args ...any) Row {
	if p.db == nil {
		return p.Querier.QueryRow(ctx, query, args...)
	}
	st, err := p.stmt(ctx, query)
	switch {
	case err != nil:
		return errRow{err}
	case st == nil:
		return p.Querier.QueryRow(ctx, query, args...)
	}
	return sqlRow{st.QueryRowContext(ctx, args...)}
}

// errRow is a Row whose Scan fails with err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// Len is how many prepared statements p keeps.
func (p *Prepared) Len() int { return int(p.count.Load()) }

// Close closes the prepared statements.
func (p *Prepared) Close() error {
	p.stmts.Range(func(_, st any) bool {
		st.(*sql.Stmt).Close()
		return true
	})
	return nil
}
