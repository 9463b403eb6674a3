package sqlitedb

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentmem/agentmem/internal/sqldb"
)

// TestSQLDBStmtCache: a write statement is prepared once, after the first
// transaction that runs it, and reused by the later ones; the cache stays
// within its bound.
func TestSQLDBStmtCache(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "c.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := NewSQLDB(db)
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Writer().Exec(ctx, `CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	const insert = `INSERT INTO t (k, v) VALUES ($1, $2)`
	for i := range 3 {
		err := s.Write(ctx, func(ctx context.Context, tx sqldb.Tx) error {
			if _, ok := sqldb.SQLTx(tx); !ok {
				t.Error("SQLTx does not see the write transaction")
			}
			_, err := tx.Exec(ctx, insert, fmt.Sprint(i), i)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		// The insert is the one statement the writes ran.
		if n := s.stmts.Len(); n != 1 {
			t.Fatalf("after write %d, %d statements prepared; want the insert, once", i, n)
		}
	}
	var n int
	if err := s.Reader().QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d rows, %v; want 3", n, err)
	}
	// Statements built at run time beyond the bound are not kept.
	for i := range sqldb.MaxStmts + 10 {
		q := fmt.Sprintf(`SELECT %d FROM t WHERE k = $1`, i)
		err := s.Write(ctx, func(ctx context.Context, tx sqldb.Tx) error {
			var one int
			if err := tx.QueryRow(ctx, q, "0").Scan(&one); err != nil {
				return err
			}
			if one != i {
				return fmt.Errorf("got %d, want %d", one, i)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if kept := s.stmts.Len(); kept > sqldb.MaxStmts {
		t.Fatalf("%d statements kept, more than %d", kept, sqldb.MaxStmts)
	}
}
