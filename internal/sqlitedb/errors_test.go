package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
)

// TestClassifyLocked: a write that finds the database locked by another
// connection past its busy timeout fails with SQLITE_BUSY, which Classify
// marks transient; the driver's error stays reachable.
func TestClassifyLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locked.db")
	db, err := Open(path, Options{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.W.Exec(`CREATE TABLE t (k TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	// Another connection, as another process would have, holds the write
	// lock.
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	other.SetMaxOpenConns(1)
	lock, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(`INSERT INTO t VALUES ('held')`); err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback() //nolint:errcheck // the test only holds the lock

	_, err = db.W.Exec(`INSERT INTO t VALUES ('x')`)
	if err == nil {
		t.Fatal("a write past a held lock succeeded")
	}
	if !Transient(err) {
		t.Fatalf("Transient(%v) = false; want true for a locked database", err)
	}
	c := Classify(err)
	if !errors.Is(c, agentmem.ErrUnavailable) || !errors.Is(c, err) {
		t.Errorf("Classify(%v) = %v; want it wrapping ErrUnavailable and the driver's error", err, c)
	}
}

// TestClassify: deadlines are transient, cancellations and other errors
// (a syntax error, a constraint) are not, and Classify leaves those
// unchanged.
func TestClassify(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	if _, err := db.W.ExecContext(ctx, `INSERT INTO t VALUES ('a', 1)`); err != nil {
		t.Fatal(err)
	}
	_, dup := db.W.ExecContext(ctx, `INSERT INTO t VALUES ('a', 2)`)
	_, syntax := db.R.QueryContext(ctx, `SELEC nothing`)
	expired, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	_, deadline := db.R.QueryContext(expired, `SELECT 1`)
	cancelled, cancel2 := context.WithCancel(ctx)
	cancel2()
	_, canceled := db.R.QueryContext(cancelled, `SELECT 1`)
	for _, c := range []struct {
		name      string
		err       error
		transient bool
	}{
		{"unique violation", dup, false},
		{"syntax error", syntax, false},
		{"deadline", deadline, true},
		{"cancelled", canceled, false},
		{"group closed", ErrGroupClosed, true},
		{"nil", nil, false},
	} {
		if c.err == nil && c.name != "nil" {
			t.Fatalf("%s: no error", c.name)
		}
		got := Classify(c.err)
		if errors.Is(got, agentmem.ErrUnavailable) != c.transient {
			t.Errorf("%s: Classify(%v) = %v; transient %v", c.name, c.err, got, c.transient)
		}
		if !c.transient && got != c.err {
			t.Errorf("%s: Classify changed %v into %v", c.name, c.err, got)
		}
	}
}

// TestClassifyFull: a write into a database that has reached its size
// (SQLITE_FULL, here through max_page_count; SQLite's VFS reports a
// file system without room, ENOSPC, the same way) is resource exhaustion:
// transient, agentmem.ErrExhausted, the driver's error reachable; and the
// same write succeeds once there is room.
func TestClassifyFull(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	var pages int64
	if err := db.W.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := db.W.ExecContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, pages)); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 64<<10)
	_, err := db.W.ExecContext(ctx, `INSERT INTO t VALUES ($1, 1)`, big)
	if err == nil {
		t.Fatal("a write past max_page_count succeeded")
	}
	if !Transient(err) || !Exhausted(err) {
		t.Fatalf("Transient, Exhausted(%v) = %v, %v; want true, true", err, Transient(err), Exhausted(err))
	}
	c := Classify(err)
	if !errors.Is(c, agentmem.ErrExhausted) || !errors.Is(c, agentmem.ErrUnavailable) || !errors.Is(c, err) {
		t.Errorf("Classify(%v) = %v; want it wrapping ErrExhausted and the driver's error", err, c)
	}
	if _, err := db.W.ExecContext(ctx, `PRAGMA max_page_count = 1000000`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.W.ExecContext(ctx, `INSERT INTO t VALUES ($1, 1)`, big); err != nil {
		t.Fatalf("the write once there is room: %v", err)
	}
	for _, other := range []error{context.Canceled, ErrGroupClosed, errors.New("corrupt")} {
		if Exhausted(other) {
			t.Errorf("Exhausted(%v) = true", other)
		}
	}
}
