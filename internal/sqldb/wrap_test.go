package sqldb_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentmem/agentmem/internal/pgdb"
	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/internal/sqlitedb"
	"github.com/agentmem/agentmem/internal/testenv"
)

// checkQuerier runs the same statements through a Querier made by
// NewSQLiteQuerier or pgdb.NewQuerier: placeholders by number, rows
// affected, a query's rows, and ErrNoRows.
func checkQuerier(t *testing.T, q sqldb.Querier) {
	t.Helper()
	ctx := context.Background()
	n, err := q.Exec(ctx, `INSERT INTO w (k, v) VALUES ($2, $1), ($3, $1)`, 7, "a", "b")
	if err != nil || n != 2 {
		t.Fatalf("insert: %d rows, %v", n, err)
	}
	rows, err := q.Query(ctx, `SELECT k FROM w WHERE v = $1 ORDER BY k`, 7)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		got = append(got, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("query: %v, %v", got, err)
	}
	var v int64
	if err := q.QueryRow(ctx, `SELECT v FROM w WHERE k = $1`, "zz").Scan(&v); !errors.Is(err, sqldb.ErrNoRows) {
		t.Fatalf("missing row: %v, want ErrNoRows", err)
	}
}

// TestNewSQLiteQuerier: a Querier over a transaction a component began
// itself rewrites $N and reports ErrNoRows, and its writes are the
// transaction's.
func TestNewSQLiteQuerier(t *testing.T) {
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "w.db"), sqlitedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.W.ExecContext(ctx, `CREATE TABLE w (k TEXT PRIMARY KEY, v INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.W.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkQuerier(t, sqldb.NewSQLiteQuerier(tx))
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.R.QueryRowContext(ctx, `SELECT count(*) FROM w`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after rollback: %d rows, %v", n, err)
	}
}

// TestPgxQuerier: pgdb.NewQuerier's Querier over a connection held
// from a pool, in a transaction begun by a statement, as a pipelined
// writer does.
func TestPgxQuerier(t *testing.T) {
	url := testenv.PostgresURL(t)
	name := testenv.FreshSchema(t, url)
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, url, name, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE SCHEMA "`+name+`"; CREATE TABLE w (k text PRIMARY KEY, v bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	checkQuerier(t, pgdb.NewQuerier(conn))
	if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM w`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after rollback: %d rows, %v", n, err)
	}
}
