package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

func openTemp(t *testing.T) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.W.Exec(`CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return db, path
}

func count(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// One file opened twice in a process shares its pools, which stay open
// until the last DB closes; closing one DB twice does not close the
// other's.
func TestOpenSharesAFile(t *testing.T) {
	a, path := openTemp(t)
	b, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.W != b.W || a.R != b.R {
		t.Fatal("two DBs on one file have pools of their own")
	}
	if _, err := b.W.Exec(`INSERT INTO t VALUES ('x', 1)`); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, a.R); n != 1 {
		t.Fatalf("after the other DB closed: %d rows, want 1", n)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.R.Ping(); err == nil {
		t.Fatal("the pools are open after the last DB closed")
	}
	// A new Open after the last Close opens new pools.
	c, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.W == a.W {
		t.Fatal("reopened the closed pools")
	}
	if n := count(t, c.R); n != 1 {
		t.Fatalf("reopened: %d rows, want 1", n)
	}
}

// Concurrent writes all commit; a failing one is rolled back alone.
func TestGroupCommitsTogether(t *testing.T) {
	db, _ := openTemp(t)
	g := NewGroup(db.W)
	defer g.Close()
	errBoom := errors.New("boom")
	var wg sync.WaitGroup
	errs := make([]error, 200)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = g.Write(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (?, ?)`, fmt.Sprint(i), i); err != nil {
					return err
				}
				if i%10 == 0 {
					return errBoom // after a write: the savepoint must undo it
				}
				return nil
			})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if want := i%10 == 0; want != errors.Is(err, errBoom) || (!want && err != nil) {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if n := count(t, db.R); n != 180 {
		t.Fatalf("%d rows, want 180", n)
	}
	// A write whose function fails on the database (a duplicate key)
	// fails alone too.
	err := g.Write(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO t VALUES ('1', 0)`)
		return err
	})
	if err == nil {
		t.Fatal("a duplicate key was written")
	}
	// A write alone in its transaction (no savepoint) that fails after
	// writing leaves nothing.
	err = g.Write(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES ('alone', 0)`); err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("a failed lone write: %v", err)
	}
	if n := count(t, db.R); n != 180 {
		t.Fatalf("%d rows after a failed lone write, want 180", n)
	}
	if err := g.Write(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO t VALUES ('alone', 0)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db.R); n != 181 {
		t.Fatalf("%d rows after a lone write, want 181", n)
	}
}

func TestGroupContextAndClose(t *testing.T) {
	db, _ := openTemp(t)
	g := NewGroup(db.W)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	err := g.Write(ctx, func(context.Context, *sql.Tx) error { ran = true; return nil })
	if !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("a cancelled write: err %v, ran %v", err, ran)
	}
	g.Close()
	g.Close()
	err = g.Write(context.Background(), func(context.Context, *sql.Tx) error { ran = true; return nil })
	if !errors.Is(err, ErrGroupClosed) || ran {
		t.Fatalf("a write after Close: err %v, ran %v", err, ran)
	}
}

// TestGroupRedoable: a redoable write commits and is read back, and the
// write connection commits durably again afterwards (synchronous=FULL,
// 2), whether the redoable batch committed or failed.
func TestGroupRedoable(t *testing.T) {
	db, _ := openTemp(t)
	g := NewGroup(db.W)
	defer g.Close()
	ctx := context.Background()
	synchronous := func() int {
		t.Helper()
		var n int
		if err := db.W.QueryRow(`PRAGMA synchronous`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	insert := func(k string) func(ctx context.Context, tx *sql.Tx) error {
		return func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO t (k, v) VALUES (?, 1)`, k)
			return err
		}
	}
	if err := g.WriteRedoable(ctx, insert("a")); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db.R); n != 1 {
		t.Fatalf("%d rows after a redoable write", n)
	}
	if s := synchronous(); s != 2 {
		t.Fatalf("synchronous = %d after a redoable write, want 2 (FULL)", s)
	}
	if err := g.WriteRedoable(ctx, insert("a")); err == nil {
		t.Fatal("a duplicate key was written")
	}
	if s := synchronous(); s != 2 {
		t.Fatalf("synchronous = %d after a failed redoable write, want 2 (FULL)", s)
	}
	if err := g.Write(ctx, insert("b")); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db.R); n != 2 {
		t.Fatalf("%d rows", n)
	}
}

// The write connection maps the file and the read connections do not
// (dsnParams): a reader's map is dropped at every read transaction that
// follows another connection's commit.
func TestReadersDoNotMapTheFile(t *testing.T) {
	db, _ := openTemp(t)
	for _, c := range []struct {
		name string
		pool *sql.DB
		want int64
	}{{"write", db.W, 256 << 20}, {"read", db.R, 0}} {
		var got int64
		if err := c.pool.QueryRow(`PRAGMA mmap_size`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("the %s connection's mmap_size is %d, want %d", c.name, got, c.want)
		}
	}
}
