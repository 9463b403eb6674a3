package sqldb_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/pgdb"
	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/internal/sqlitedb"
	"github.com/agentmem/agentmem/internal/testenv"
)

// schema is the test table in each dialect.
func schema(d *sqldb.Dialect) string {
	if d.IsSQLite() {
		return `CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL, at INTEGER, note TEXT)`
	}
	return `CREATE TABLE t (k text PRIMARY KEY, v bigint NOT NULL, at timestamptz, note text)`
}

func openSQLite(t *testing.T) sqldb.DB {
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "t.db"), sqlitedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := sqlitedb.NewSQLDB(db)
	t.Cleanup(func() { s.Close() })
	return s
}

func openPostgres(t *testing.T) sqldb.DB {
	url := testenv.PostgresURL(t)
	name := testenv.FreshSchema(t, url)
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, url, name, 8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	p := pgdb.NewSQLDB(pool)
	t.Cleanup(func() { p.Close() })
	return p
}

// eachDB runs fn on every database, each with the test table.
func eachDB(t *testing.T, fn func(t *testing.T, db sqldb.DB)) {
	for name, open := range map[string]func(*testing.T) sqldb.DB{"sqlite": openSQLite, "postgres": openPostgres} {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			if _, err := db.Writer().Exec(context.Background(), schema(db.Dialect())); err != nil {
				t.Fatal(err)
			}
			fn(t, db)
		})
	}
}

// TestDB runs the same checks on every database.
func TestDB(t *testing.T) {
	eachDB(t, func(t *testing.T, db sqldb.DB) {
		t.Run("Placeholders", func(t *testing.T) { checkPlaceholders(t, db) })
		t.Run("Times", func(t *testing.T) { checkTimes(t, db) })
		t.Run("Errors", func(t *testing.T) { checkErrors(t, db) })
		t.Run("Write", func(t *testing.T) { checkWrite(t, db) })
		t.Run("Read", func(t *testing.T) { checkRead(t, db) })
		t.Run("WritePanics", func(t *testing.T) { checkWritePanics(t, db) })
		t.Run("ExecAll", func(t *testing.T) { checkExecAll(t, db) })
	})
}

func checkPlaceholders(t *testing.T, db sqldb.DB) {
	ctx := context.Background()
	// Out of order and used twice: $N binds by number on both.
	n, err := db.Writer().Exec(ctx, `INSERT INTO t (note, k, v) VALUES (CAST($2 AS TEXT) || '$1' || $2, $1, CAST($3 AS INTEGER) + $3)`, "p", "x", 21)
	if err != nil || n != 1 {
		t.Fatalf("insert: %d, %v", n, err)
	}
	var note string
	var v int64
	if err := db.Reader().QueryRow(ctx, `SELECT note, v FROM t WHERE k = $1`, "p").Scan(&note, &v); err != nil {
		t.Fatal(err)
	}
	if note != "x$1x" || v != 42 {
		t.Fatalf("note %q, v %d; want x$1x, 42", note, v)
	}
}

func checkTimes(t *testing.T, db sqldb.DB) {
	ctx := context.Background()
	d := db.Dialect()
	at := time.Date(2026, 11, 24, 12, 30, 1, 123456789, time.FixedZone("x", 3600))
	if _, err := db.Writer().Exec(ctx, `INSERT INTO t (k, v, at) VALUES ('t1', 1, $1), ('t0', 0, $2)`, d.Time(at), d.Time(time.Time{})); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Reader().Query(ctx, `SELECT k, at FROM t WHERE k IN ('t0', 't1') ORDER BY k`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []time.Time
	for rows.Next() {
		var k string
		var ts time.Time
		if err := rows.Scan(&k, d.ScanTime(&ts)); err != nil {
			t.Fatal(err)
		}
		got = append(got, ts)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := at.UTC().Truncate(time.Microsecond)
	if len(got) != 2 || !got[0].IsZero() || !got[1].Equal(want) || got[1].Location() != time.UTC {
		t.Fatalf("times %v; want [zero %v]", got, want)
	}
}

func checkErrors(t *testing.T, db sqldb.DB) {
	ctx := context.Background()
	var v int64
	if err := db.Reader().QueryRow(ctx, `SELECT v FROM t WHERE k = $1`, "absent").Scan(&v); !errors.Is(err, sqldb.ErrNoRows) {
		t.Fatalf("missing row: %v; want ErrNoRows", err)
	}
	_, err := db.Writer().Exec(ctx, `INSERT INTO t (k, v) VALUES ('p', 1)`)
	if _, ok := db.Dialect().UniqueViolation(err); !ok {
		t.Fatalf("duplicate key: %v; want a unique violation", err)
	}
	if errors.Is(db.Dialect().Classify(err), agentmem.ErrUnavailable) {
		t.Fatalf("a duplicate key is not transient: %v", err)
	}
	if _, ok := db.Dialect().UniqueViolation(errors.New("other")); ok {
		t.Fatal("any error taken for a unique violation")
	}
	cctx, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	_, err = db.Writer().Exec(cctx, `UPDATE t SET v = v`)
	if !errors.Is(db.Dialect().Classify(err), agentmem.ErrUnavailable) {
		t.Fatalf("a passed deadline: %v; want transient", err)
	}
}

func checkWrite(t *testing.T, db sqldb.DB) {
	ctx := context.Background()
	// Concurrent writers, one of them failing: its work is undone, the
	// others' kept.
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = db.Write(ctx, func(ctx context.Context, tx sqldb.Tx) error {
				if _, err := tx.Exec(ctx, `INSERT INTO t (k, v) VALUES ($1, $2)`, "w"+string(rune('a'+i)), i); err != nil {
					return err
				}
				if i == 7 {
					return errors.New("refused")
				}
				return nil
			})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if (i == 7) != (err != nil) {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	var n int64
	if err := db.Reader().QueryRow(ctx, `SELECT count(*) FROM t WHERE k LIKE 'w%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 15 {
		t.Fatalf("%d rows written; want 15 (the failed write's undone)", n)
	}
}

func checkRead(t *testing.T, db sqldb.DB) {
	ctx := context.Background()
	err := db.Read(ctx, func(tx sqldb.Tx) error {
		var before, after int64
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&before); err != nil {
			return err
		}
		if _, err := db.Writer().Exec(ctx, `INSERT INTO t (k, v) VALUES ('r', 1)`); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&after); err != nil {
			return err
		}
		if before != after {
			t.Errorf("a read transaction saw a later write: %d then %d rows", before, after)
		}
		_, err := tx.Exec(ctx, `DELETE FROM t`)
		if err == nil {
			t.Error("a read transaction wrote")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkWritePanics: a panic of a Write's function rolls its transaction
// back, frees its connection and reaches the caller.
func checkWritePanics(t *testing.T, db sqldb.DB) {
	ctx := context.Background()
	for i := range 12 { // more than the test pool's connections
		func() {
			defer func() {
				if v := recover(); v != "boom" {
					t.Fatalf("write %d: recovered %v, want the function's panic", i, v)
				}
			}()
			_ = db.Write(ctx, func(ctx context.Context, tx sqldb.Tx) error {
				if _, err := tx.Exec(ctx, `INSERT INTO t (k, v) VALUES ('panicked', 1)`); err != nil {
					return err
				}
				panic("boom")
			})
		}()
	}
	var n int64
	if err := db.Reader().QueryRow(ctx, `SELECT count(*) FROM t WHERE k = 'panicked'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows of panicked writes, %v; want none", n, err)
	}
	if err := db.Write(ctx, func(ctx context.Context, tx sqldb.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO t (k, v) VALUES ('after', 1)`)
		return err
	}); err != nil {
		t.Fatalf("a write after panicked ones: %v", err)
	}
}

// checkExecAll: ExecAll runs a write's statements in order (PostgreSQL's
// in one batch) and returns the first one's error, whose write is then
// undone whole.
func checkExecAll(t *testing.T, db sqldb.DB) {
	ctx := context.Background()
	insert := func(k string, v int) sqldb.Stmt {
		return sqldb.Stmt{SQL: `INSERT INTO t (k, v) VALUES ($1, $2)`, Args: []any{k, v}}
	}
	update := sqldb.Stmt{SQL: `UPDATE t SET v = v * 10 WHERE k = $1`, Args: []any{"e1"}}
	if err := db.Write(ctx, func(ctx context.Context, tx sqldb.Tx) error {
		return sqldb.ExecAll(ctx, tx, []sqldb.Stmt{insert("e1", 1), update, insert("e2", 2)})
	}); err != nil {
		t.Fatal(err)
	}
	err := db.Write(ctx, func(ctx context.Context, tx sqldb.Tx) error {
		return sqldb.ExecAll(ctx, tx, []sqldb.Stmt{insert("e3", 3), insert("e1", 4), insert("e4", 4)})
	})
	if _, ok := db.Dialect().UniqueViolation(err); !ok {
		t.Fatalf("a batch with a duplicate key: %v; want the unique violation", err)
	}
	var n, v int64
	if err := db.Reader().QueryRow(ctx, `SELECT count(*), sum(v) FROM t WHERE k LIKE 'e%'`).Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	if n != 2 || v != 12 {
		t.Fatalf("%d rows summing to %d; want e1 (10, updated in order) and e2 (2), the failed batch's undone", n, v)
	}
}
