package sqldb_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentmem/agentmem/internal/sqldb"
)

// TestPrepared checks that a Prepared runs queries as the reader does,
// keeps one statement per query on SQLite (none on PostgreSQL, where pgx
// keeps them), and runs queries unprepared once it keeps its most.
func TestPrepared(t *testing.T) {
	eachDB(t, func(t *testing.T, db sqldb.DB) {
		ctx := context.Background()
		if _, err := db.Writer().Exec(ctx, `INSERT INTO t (k, v) VALUES ('a', 1), ('b', 2)`); err != nil {
			t.Fatal(err)
		}
		p := sqldb.NewPrepared(db)
		defer p.Close()
		sqlite := db.Dialect().IsSQLite()
		want := func(n int) {
			t.Helper()
			if !sqlite {
				n = 0
			}
			if p.Len() != n {
				t.Fatalf("Len = %d, want %d", p.Len(), n)
			}
		}
		for range 3 {
			var v int64
			if err := p.QueryRow(ctx, `SELECT v FROM t WHERE k = $1`, "b").Scan(&v); err != nil || v != 2 {
				t.Fatalf("QueryRow: %d, %v", v, err)
			}
		}
		want(1)
		if err := p.QueryRow(ctx, `SELECT v FROM t WHERE k = $1`, "zz").Scan(new(int64)); !errors.Is(err, sqldb.ErrNoRows) {
			t.Fatalf("QueryRow of no row: %v, want ErrNoRows", err)
		}
		rows, err := p.Query(ctx, `SELECT k FROM t WHERE v >= $1 ORDER BY k`, 1)
		if err != nil {
			t.Fatal(err)
		}
		var ks []string
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				t.Fatal(err)
			}
			ks = append(ks, k)
		}
		rows.Close()
		if err := rows.Err(); err != nil || fmt.Sprint(ks) != "[a b]" {
			t.Fatalf("Query: %v, %v", ks, err)
		}
		want(2)
		// A reader's Exec: on SQLite the reader is read-only.
		n, err := p.Exec(ctx, `UPDATE t SET note = $1 WHERE k = $2`, "x", "a")
		if sqlite && err == nil || !sqlite && (err != nil || n != 1) {
			t.Fatalf("Exec: %d, %v", n, err)
		}
		if err := p.QueryRow(ctx, `SELECT nosuchcolumn FROM t`).Scan(new(int64)); err == nil {
			t.Fatal("a query that does not prepare: no error")
		}
		// Past its most, it runs new queries all the same.
		for i := range 300 {
			var v int64
			if err := p.QueryRow(ctx, fmt.Sprintf(`SELECT v + %d FROM t WHERE k = $1`, i), "a").Scan(&v); err != nil || v != int64(1+i) {
				t.Fatalf("query %d: %d, %v", i, v, err)
			}
		}
		if sqlite && p.Len() != 256 {
			t.Fatalf("Len = %d, want 256, the most", p.Len())
		}
	})
}
