// Package sqldb is the small layer under agentmem's SQL backends. It has
// one interface to a database, which the session store, the recall index,
// the facts store and the API keys are each written against once. A
// Dialect says what differs between SQLite and PostgreSQL (Citus is
// PostgreSQL here).
//
// The package imports no database driver, so that a backend links only its
// own database's (a test checks it). SQLite's DB and Dialect are
// sqlitedb.SQLDB and sqlitedb.Dialect (over modernc.org/sqlite), and
// PostgreSQL's are pgdb.SQLDB and pgdb.Dialect (over pgx). What is here is
// what the components and both databases share, and what needs no more
// than database/sql. That is the Queriers over database/sql that rewrite
// placeholders, the caches of prepared statements (StmtCache, Prepared),
// Guard, ExecAll and the scanning of times.
//
// Queries are written in PostgreSQL's form, with $1, $2, ... placeholders.
// The SQLite side rewrites them to SQLite's numbered ?1, ?2, ..., which
// bind by number, as $N does in PostgreSQL. What the two databases spell
// differently (a JSON or array operator, greatest against max) is chosen
// by the component from Dialect.Name. Dialect.Time and Dialect.ScanTime
// hide how each stores a time.
//
// A DB has a reader and a writer. On SQLite the reader is the pool of
// read-only connections and the writer the one write connection; on
// PostgreSQL both are the pool. Read runs a function in a transaction that
// sees one snapshot. Write runs it in a write transaction. On SQLite that
// transaction may be shared with other writers' (group commit, each in a
// savepoint of its own). On PostgreSQL it is its own, run again when the
// server aborts it for a deadlock or a serialization failure.
package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrNoRows is the error of a Row's Scan when the query returned no row.
var ErrNoRows = errors.New("sqldb: no rows in result set")

// Querier runs statements: a DB's reader or writer, or a transaction.
type Querier interface {
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// Query runs a query; the caller closes the Rows.
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// QueryRow runs a query that returns at most one row; its Scan
	// returns ErrNoRows when there is none.
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Rows is the result of a query, read row by row.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	// Err is the error that ended the iteration, if any.
	Err() error
	Close()
}

// Row is the result of QueryRow.
type Row interface {
	Scan(dest ...any) error
}

// Tx is a transaction of Read or Write.
type Tx interface {
	Querier
}

// Stmt is a statement and its arguments, one of those ExecAll runs.
type Stmt struct {
	SQL  string
	Args []any
}

// Batcher is a Querier that sends several statements to the database in
// one round trip: PostgreSQL's (a pgx batch).
type Batcher interface {
	// ExecBatch runs stmts, in order, in one round trip, and returns the
	// first error.
	ExecBatch(ctx context.Context, stmts []Stmt) error
}

// ExecAll runs stmts in tx, in order. It runs them in one round trip where
// tx is a Batcher and there is more than one, else one after the other
// (SQLite runs them in process).
func ExecAll(ctx context.Context, tx Tx, stmts []Stmt) error {
	if b, ok := tx.(Batcher); ok && len(stmts) > 1 {
		return b.ExecBatch(ctx, stmts)
	}
	for _, st := range stmts {
		if _, err := tx.Exec(ctx, st.SQL, st.Args...); err != nil {
			return err
		}
	}
	return nil
}

// DB is an open database.
type DB interface {
	// Dialect says which database this is.
	Dialect() *Dialect
	// Reader runs statements that only read, outside a transaction.
	Reader() Querier
	// Writer runs statements that write, each in a transaction of its
	// own.
	Writer() Querier
	// Read runs fn in a read-only transaction that sees one snapshot of
	// the database.
	Read(ctx context.Context, fn func(tx Tx) error) error
	// Write runs fn in a write transaction and returns once it has committed
	// (nil) or fn or the commit failed. fn's writes are undone if it returns
	// an error. fn may run more than once, since PostgreSQL retries a
	// transaction aborted by a deadlock or a serialization failure. So it
	// must not have effects outside the transaction that it does not repeat
	// safely. On SQLite fn's transaction may hold other writers' work too:
	// fn gets a context that is never cancelled, and ctx bounds only the
	// wait for the writer. A panic of fn rolls its transaction back and is
	// raised again in Write's caller.
	Write(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// Close releases the DB's connections.
	Close() error
}

// panicked carries a panic of a Write's function out of its transaction
// (rolled back), to be raised again in the caller's goroutine. On SQLite
// the function runs in the group writer's goroutine. On PostgreSQL an
// unrecovered panic would leave the transaction's connection busy.
type panicked struct{ v any }

func (p *panicked) Error() string { return fmt.Sprint("panic: ", p.v) }

// SafeWrite runs write, a DB's way of running a write transaction, with fn
// made safe to panic. fn's panic ends its transaction as an error would
// and is raised again in SafeWrite's caller. Every DB's Write goes through
// it.
func SafeWrite(ctx context.Context, fn func(ctx context.Context, tx Tx) error,
	write func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error) error {
	var p *panicked
	err := write(ctx, func(ctx context.Context, tx Tx) (err error) {
		defer func() {
			if v := recover(); v != nil {
				p = &panicked{v}
				err = p
			}
		}()
		return fn(ctx, tx)
	})
	if p != nil {
		panic(p.v)
	}
	return err
}

// Dialect is what differs between the databases that a component cannot
// write once.
type Dialect struct {
	// Name is "sqlite" or "postgres".
	Name string
	// Classify marks the errors that may pass when the same work is tried
	// again later as transient (wrapping agentmem.ErrUnavailable) and
	// returns the others unchanged.
	Classify func(error) error
	// Transient reports whether err may pass when the same work is tried
	// again later (what Classify marks), and Exhausted whether it is the
	// database out of disk space or memory (agentmem.ErrExhausted).
	Transient, Exhausted func(err error) bool
	// UniqueViolation reports whether err is a unique or primary key
	// constraint violation, and its message.
	UniqueViolation func(err error) (string, bool)
	// TimeMicros says that times are stored as microseconds since the
	// Unix epoch (an integer column) rather than as timestamptz.
	TimeMicros bool
	// TimeDest, when set, is ScanTime's scan destination for the driver's
	// own scanning. That is cheaper than the sql.Scanner of the package's
	// ScanTime, since pgx boxes every value it hands to one. Nil is the
	// package's ScanTime.
	TimeDest func(t *time.Time) sql.Scanner
	// RawBytesDest, when set, is RawBytes's scan destination: the
	// driver's own type for bytes it lends. Nil is database/sql's
	// sql.RawBytes.
	RawBytesDest func(b *[]byte) any
}

// SQLite and Postgres name the dialects.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// IsSQLite reports whether the dialect is SQLite's.
func (d *Dialect) IsSQLite() bool { return d.Name == SQLite }

// Time returns t as a query argument for a time column: microseconds
// since the Unix epoch on SQLite, a timestamptz on PostgreSQL. The zero
// time is NULL.
func (d *Dialect) Time(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	if d.TimeMicros {
		return t.UnixMicro()
	}
	return t.UTC().Truncate(time.Microsecond)
}

// ScanTime returns the dialect's scan destination for a time column
// that sets *t, in UTC; NULL sets the zero time.
func (d *Dialect) ScanTime(t *time.Time) sql.Scanner {
	if d.TimeDest != nil {
		return d.TimeDest(t)
	}
	return ScanTime(t)
}

// RawBytes returns the dialect's scan destination for a bytes column
// that sets *b to the driver's own buffer of the value, without the copy
// that scanning into a *[]byte makes; NULL sets nil. The bytes are valid
// only until the next Next, Scan or Close of the rows, so the caller
// copies whatever it keeps. It is for the rows of Query, never for a Row
// of QueryRow, which closes its rows before it returns.
func (d *Dialect) RawBytes(b *[]byte) any {
	if d.RawBytesDest != nil {
		return d.RawBytesDest(b)
	}
	return (*sql.RawBytes)(b)
}

// ScanTime returns a scan destination for a time column (either
// database's form) that sets *t, in UTC; NULL sets the zero time. A
// component scans with its Dialect's ScanTime, which may be the driver's
// own.
func ScanTime(t *time.Time) sql.Scanner { return (*timeDest)(t) }

// ScanNanoTime is ScanTime for a column that SQLite holds as nanoseconds
// since the Unix epoch rather than microseconds (the session store's).
func ScanNanoTime(t *time.Time) sql.Scanner { return (*nanoTimeDest)(t) }

type (
	timeDest     time.Time
	nanoTimeDest time.Time
)

func (d *timeDest) Scan(v any) error {
	t, err := scannedTime(v, time.UnixMicro)
	*d = timeDest(t)
	return err
}

func (d *nanoTimeDest) Scan(v any) error {
	t, err := scannedTime(v, func(n int64) time.Time { return time.Unix(0, n) })
	*d = nanoTimeDest(t)
	return err
}

// scannedTime is the time of a scanned value: NULL (the zero time), an
// integer (read by fromInt) or a time, in UTC.
func scannedTime(v any, fromInt func(int64) time.Time) (time.Time, error) {
	switch v := v.(type) {
	case nil:
		return time.Time{}, nil
	case int64:
		return fromInt(v).UTC(), nil
	case time.Time:
		return v.UTC(), nil
	}
	return time.Time{}, fmt.Errorf("sqldb: cannot scan %T into a time", v)
}

// Value makes a timeDest usable as an argument too.
func (d *timeDest) Value() (driver.Value, error) { return time.Time(*d), nil }

// rebound caches rebind's results: a backend's queries are mostly a
// fixed set of constant strings. Queries built at run time (a list of
// placeholders as long as the arguments) could make it grow without end,
// so it stops taking new entries at maxRebound.
var (
	rebound      sync.Map
	reboundCount atomic.Int64
)

const maxRebound = 4096

// rebind rewrites PostgreSQL's $N placeholders to SQLite's ?N, leaving
// quoted strings and identifiers alone.
func rebind(query string) string {
	if !strings.Contains(query, "$") {
		return query
	}
	if r, ok := rebound.Load(query); ok {
		return r.(string)
	}
	r := rebindText(query)
	if reboundCount.Add(1) <= maxRebound {
		rebound.Store(query, r)
	}
	return r
}

func rebindText(query string) string {
	var b strings.Builder
	b.Grow(len(query))
	var quote byte
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '$' && i+1 < len(query) && query[i+1] >= '0' && query[i+1] <= '9':
			c = '?'
		}
		b.WriteByte(c)
	}
	return b.String()
}
