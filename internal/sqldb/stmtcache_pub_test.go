package sqldb_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/internal/sqlitedb"
)

// TestStmtCacheQueriers: a StmtCache's transaction Querier runs missed
// statements unprepared and Warm prepares them for the next transaction;
// its DB Querier prepares a statement the first time it runs and reuses
// it; neither keeps more than MaxStmts; after Close both still run
// statements, unprepared.
func TestStmtCacheQueriers(t *testing.T) {
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "p.db"), sqlitedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.W.ExecContext(ctx, `CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	w, r := sqldb.NewStmtCache(db.W), sqldb.NewStmtCache(db.R)

	// Each cache meets one statement first, so that one prepared
	// statement is that one.
	const insert = `INSERT INTO t (k, v) VALUES ($1, $2)`
	for i := range 2 {
		tx, err := db.W.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := w.Tx(tx).Exec(ctx, insert, fmt.Sprint(i), i); err != nil || n != 1 {
			t.Fatalf("insert %d: %d, %v", i, n, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if i == 0 && w.Len() != 0 {
			t.Fatal("prepared inside the transaction, which holds the one write connection")
		}
		w.Warm(ctx)
		if w.Len() != 1 {
			t.Fatalf("after transaction %d and Warm, %d statements prepared; want the insert", i, w.Len())
		}
	}

	const count = `SELECT count(*) FROM t WHERE v >= $1`
	for range 2 {
		var n int
		if err := r.DB().QueryRow(ctx, count, 0).Scan(&n); err != nil || n != 2 {
			t.Fatalf("count: %d, %v", n, err)
		}
		if r.Len() != 1 {
			t.Fatalf("the reader's query is not prepared once: %d statements", r.Len())
		}
	}
	var one int
	if err := r.DB().QueryRow(ctx, `SELECT 1 FROM t WHERE k = $1`, "zz").Scan(&one); err != sqldb.ErrNoRows {
		t.Fatalf("missing row: %v, want ErrNoRows", err)
	}
	for i := range sqldb.MaxStmts + 5 {
		if err := r.DB().QueryRow(ctx, fmt.Sprintf(`SELECT %d`, i)).Scan(&one); err != nil || one != i {
			t.Fatalf("statement %d: %d, %v", i, one, err)
		}
	}
	if r.Len() > sqldb.MaxStmts {
		t.Fatalf("%d statements kept, more than %d", r.Len(), sqldb.MaxStmts)
	}

	w.Close()
	r.Close()
	if r.Len() != 0 {
		t.Fatalf("%d statements left after Close", r.Len())
	}
	var n int
	if err := r.DB().QueryRow(ctx, count, 0).Scan(&n); err != nil || n != 2 {
		t.Fatalf("count after Close: %d, %v", n, err)
	}
	if r.Len() != 0 {
		t.Fatal("a closed cache prepared a statement")
	}
}
