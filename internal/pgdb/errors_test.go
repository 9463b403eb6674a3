package pgdb

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// checkClassified fails unless Classify marks err transient (or not) and,
// when it does not, returns it unchanged.
func checkClassified(t *testing.T, name string, err error, transient bool) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", name)
	}
	t.Logf("%s: %v", name, err)
	got := Classify(err)
	if errors.Is(got, agentmem.ErrUnavailable) != transient {
		t.Errorf("%s: Classify(%v) = %v; transient %v", name, err, got, transient)
	}
	if !errors.Is(got, err) {
		t.Errorf("%s: Classify(%v) = %v loses the driver's error", name, err, got)
	}
	if !transient && got != err {
		t.Errorf("%s: Classify changed %v into %v", name, err, got)
	}
}

// TestClassifyUnreachable: a server nobody listens for is transient.
func TestClassifyUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // the port is closed now
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := Open(ctx, "postgres://nobody@"+addr+"/db?sslmode=disable&connect_timeout=2", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	checkClassified(t, "closed port", pool.Ping(ctx), true)
}

// openTest opens a pool on a fresh schema of the test database.
func openTest(t *testing.T) (*pgxpool.Pool, string) {
	t.Helper()
	url := testenv.PostgresURL(t)
	schema := testenv.FreshSchema(t, url)
	ctx := context.Background()
	pool, err := Open(ctx, url, schema, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE t (k text PRIMARY KEY, v int NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO t VALUES ('a', 1)`); err != nil {
		t.Fatal(err)
	}
	return pool, url
}

// TestClassifyServerErrors drives a live server into the failures the
// classifier knows, and into some it must not call transient.
func TestClassifyServerErrors(t *testing.T) {
	pool, _ := openTest(t)
	ctx := context.Background()

	// A connection the server terminates (pg_terminate_backend, as an
	// administrator or a failover does): its next query fails.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	var ok bool
	if err := pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend: %v, %v", ok, err)
	}
	_, err = conn.Exec(ctx, `SELECT 1`)
	conn.Release()
	checkClassified(t, "terminated connection", err, true)

	// statement_timeout cancels the statement (57014).
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = '20ms'`); err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(ctx, `SELECT pg_sleep(2)`)
	_ = tx.Rollback(ctx)
	checkClassified(t, "statement timeout", err, true)

	// A context deadline.
	dctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	_, err = pool.Exec(dctx, `SELECT pg_sleep(2)`)
	cancel()
	checkClassified(t, "context deadline", err, true)

	// A context the caller cancelled is its own doing.
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err = pool.Exec(cctx, `SELECT pg_sleep(2)`)
	checkClassified(t, "cancelled context", err, false)

	// A serialization failure (40001): a repeatable-read transaction
	// updates a row another one changed since its snapshot.
	tx, err = pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT v FROM t WHERE k = 'a'`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE t SET v = v + 1 WHERE k = 'a'`); err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(ctx, `UPDATE t SET v = v + 1 WHERE k = 'a'`)
	_ = tx.Rollback(ctx)
	checkClassified(t, "serialization failure", err, true)

	// Errors of the query or the data are not transient.
	_, err = pool.Exec(ctx, `INSERT INTO t VALUES ('a', 2)`)
	checkClassified(t, "unique violation", err, false)
	_, err = pool.Exec(ctx, `SELEC 1`)
	checkClassified(t, "syntax error", err, false)
	_, err = pool.Exec(ctx, `SELECT 1 / (v - v) FROM t`)
	checkClassified(t, "division by zero", err, false)
}

// TestClassifyExhausted: the server out of disk space or memory (SQLSTATE
// class 53: 53000 insufficient_resources, 53100 disk_full, 53200
// out_of_memory) is resource exhaustion, transient and
// agentmem.ErrExhausted; too many connections (53300) is transient but
// not exhaustion of the server's room, and a configuration limit (53400)
// is neither.
func TestClassifyExhausted(t *testing.T) {
	pool, _ := openTest(t)
	ctx := context.Background()
	raise := func(code string) error {
		_, err := pool.Exec(ctx, `DO $$ BEGIN RAISE EXCEPTION 'raised' USING ERRCODE = '`+code+`'; END $$`)
		return err
	}
	for _, c := range []struct {
		code                 string
		transient, exhausted bool
	}{
		{"53000", true, true},
		{"53100", true, true},
		{"53200", true, true},
		{"53300", true, false},
		{"53400", false, false},
	} {
		err := raise(c.code)
		checkClassified(t, c.code, err, c.transient)
		if got := errors.Is(Classify(err), agentmem.ErrExhausted); got != c.exhausted || Exhausted(err) != c.exhausted {
			t.Errorf("%s: Classify(%v) is ErrExhausted: %v, Exhausted: %v; want %v", c.code, err, got, Exhausted(err), c.exhausted)
		}
	}
}
