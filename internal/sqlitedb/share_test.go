package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/internal/sqldb"
)

// Every DB open on one file, by whatever path names it, has the file's
// Group; in-memory databases each have their own.
func TestOneGroupPerFile(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(filepath.Join(dir, "f.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := Open(filepath.Join(dir, "sub", "..", ".", "f.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.Group() == nil || a.Group() != b.Group() {
		t.Fatal("two DBs on one file have Groups of their own")
	}
	other, err := Open(filepath.Join(dir, "g.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if other.Group() == a.Group() {
		t.Fatal("two files share a Group")
	}
	m1, err := Open(MemoryPath, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m1.Close()
	m2, err := Open(MemoryPath, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if m1.Group() == nil || m1.Group() == m2.Group() {
		t.Fatal("two in-memory databases share a Group")
	}
}

// twoWriters opens two SQLDBs on one new file, as two components would,
// with a table t, and records the sizes of the Group's batches.
func twoWriters(t *testing.T) (a, b *SQLDB, batches func() []int, queued <-chan int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "two.db")
	da, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(path, Options{})
	if err != nil {
		da.Close()
		t.Fatal(err)
	}
	a, b = NewSQLDB(da), NewSQLDB(db)
	t.Cleanup(func() { a.Close(); b.Close() })
	if _, err := a.Writer().Exec(context.Background(), `CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var sizes []int
	q := make(chan int, 100)
	WatchGroup(da.Group(), func(n int) { q <- n }, func(n int) {
		mu.Lock()
		sizes = append(sizes, n)
		mu.Unlock()
	})
	return a, b, func() []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(sizes)
	}, q
}

func insert(k string, fail error) func(ctx context.Context, tx sqldb.Tx) error {
	return func(ctx context.Context, tx sqldb.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO t (k, v) VALUES ($1, 1)`, k); err != nil {
			return err
		}
		return fail
	}
}

// hold starts a write of a that holds the Group until the returned
// release is called, and returns once that write is running and has been
// queued (queued reports it). release waits for the write and fails the
// test if it failed.
func hold(t *testing.T, a *SQLDB, queued <-chan int) (release func()) {
	t.Helper()
	holding, done := make(chan struct{}), make(chan struct{})
	held := make(chan error)
	go func() {
		held <- a.Write(context.Background(), func(ctx context.Context, tx sqldb.Tx) error {
			close(holding)
			<-done
			return nil
		})
	}()
	<-holding
	<-queued // the holding write's
	return func() {
		t.Helper()
		close(done)
		if err := <-held; err != nil {
			t.Fatal(err)
		}
	}
}

// together holds the Group in a write of a until writes of a and of b are
// both queued, then lets them run, and returns their errors.
func together(t *testing.T, a, b *SQLDB, queued <-chan int, fa, fb func(ctx context.Context, tx sqldb.Tx) error) (errA, errB error) {
	t.Helper()
	ctx := context.Background()
	release := hold(t, a, queued)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); errA = a.Write(ctx, fa) }()
	go func() { defer wg.Done(); errB = b.Write(ctx, fb) }()
	for n := 0; n < 2; n = <-queued {
	}
	release()
	wg.Wait()
	return errA, errB
}

func has(t *testing.T, s *SQLDB, k string) bool {
	t.Helper()
	var n int
	if err := s.Reader().QueryRow(context.Background(), `SELECT count(*) FROM t WHERE k = $1`, k).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// The writes of two components of one file that wait at the same time
// commit in one transaction.
func TestWritersOfAFileCommitTogether(t *testing.T) {
	a, b, batches, queued := twoWriters(t)
	errA, errB := together(t, a, b, queued, insert("a", nil), insert("b", nil))
	if errA != nil || errB != nil {
		t.Fatalf("writes: %v, %v", errA, errB)
	}
	if got := batches(); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("batches %v, want [1 2]: the two components' writes in one transaction", got)
	}
	if !has(t, a, "a") || !has(t, b, "b") {
		t.Fatal("a write is missing")
	}
}

// A write of one component that fails is rolled back alone: another
// component's write in the same transaction is stored.
func TestFailedWriteOfOneComponentKeepsTheOthers(t *testing.T) {
	a, b, batches, queued := twoWriters(t)
	errBoom := errors.New("boom")
	errA, errB := together(t, a, b, queued, insert("a", nil), insert("b", errBoom))
	if errA != nil || !errors.Is(errB, errBoom) {
		t.Fatalf("writes: %v, %v (want nil, boom)", errA, errB)
	}
	if got := batches(); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("batches %v, want [1 2]", got)
	}
	if !has(t, a, "a") || has(t, b, "b") {
		t.Fatal("the failed write was stored, or the other was not")
	}
	// The same with the failing write first, on the database this time (a
	// duplicate key).
	errA, errB = together(t, a, b, queued, insert("a", nil), insert("c", nil))
	if errA == nil || errB != nil {
		t.Fatalf("writes: %v, %v (want a duplicate key, nil)", errA, errB)
	}
	if !has(t, b, "c") {
		t.Fatal("the write batched after a failed one is missing")
	}
}

// Closing one component's SQLDB fails its later writes and leaves the
// file's Group, statements and connections to the other; they close with
// the last.
func TestCloseOneWriterKeepsTheOther(t *testing.T) {
	a, b, _, _ := twoWriters(t)
	ctx := context.Background()
	if err := a.Write(ctx, insert("a", nil)); err != nil {
		t.Fatal(err)
	}
	g := b.DB().Group()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Write(ctx, insert("x", nil)); !errors.Is(err, ErrGroupClosed) {
		t.Fatalf("a write after Close: %v", err)
	}
	for _, k := range []string{"b1", "b2"} {
		if err := b.Write(ctx, insert(k, nil)); err != nil {
			t.Fatalf("the other component's write after one closed: %v", err)
		}
	}
	if !has(t, b, "a") || !has(t, b, "b2") || has(t, b, "x") {
		t.Fatal("wrong rows")
	}
	if n := g.Stmts().Len(); n == 0 {
		t.Fatal("the shared statements were closed with one of their users")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.Write(ctx, func(context.Context, *sql.Tx) error { return nil }); !errors.Is(err, ErrGroupClosed) {
		t.Fatalf("the Group after its file's last DB closed: %v", err)
	}
	if n := g.Stmts().Len(); n != 0 {
		t.Fatalf("%d statements left prepared after the last close", n)
	}
}

// A write whose context ends while it waits is withdrawn and never runs;
// one queued when the Group closes fails with ErrGroupClosed.
func TestGroupWithdrawnAndClosedWrites(t *testing.T) {
	a, _, _, queued := twoWriters(t)
	g := a.DB().Group()
	holding, release := make(chan struct{}), make(chan struct{})
	held := make(chan error)
	go func() {
		held <- g.Write(context.Background(), func(context.Context, *sql.Tx) error {
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	<-queued
	ctx, cancel := context.WithCancel(context.Background())
	ran := false
	withdrawn := make(chan error)
	go func() {
		withdrawn <- g.Write(ctx, func(context.Context, *sql.Tx) error { ran = true; return nil })
	}()
	<-queued
	cancel()
	if err := <-withdrawn; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled write: %v", err)
	}
	late := make(chan error)
	go func() {
		late <- g.Write(context.Background(), func(context.Context, *sql.Tx) error { ran = true; return nil })
	}()
	<-queued
	closed := make(chan struct{})
	go func() { g.Close(); close(closed) }()
	if err := <-late; !errors.Is(err, ErrGroupClosed) {
		t.Fatalf("a write waiting when the Group closed: %v", err)
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatalf("the write running when the Group closed: %v", err)
	}
	<-closed
	if ran {
		t.Fatal("a withdrawn or closed write ran")
	}
}

// In a batch, the redoable writes (the recall index's batches, the
// largest) run first, where a write needs no savepoint; a first write
// that fails is rolled back alone and the others still commit.
func TestGroupRunsRedoableWritesFirst(t *testing.T) {
	a, b, batches, queued := twoWriters(t)
	var mu sync.Mutex
	var order []string
	record := func(k string, fail error) func(ctx context.Context, tx sqldb.Tx) error {
		return func(ctx context.Context, tx sqldb.Tx) error {
			mu.Lock()
			order = append(order, k)
			mu.Unlock()
			return insert(k, fail)(ctx, tx)
		}
	}
	errBoom := errors.New("boom")
	ctx := context.Background()
	release := hold(t, a, queued)
	var errA, errB error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); errA = a.Write(ctx, record("durable", nil)) }()
	for n := 0; n < 1; n = <-queued {
	}
	wg.Add(1)
	go func() { defer wg.Done(); errB = b.Write(sqldb.Redoable(ctx), record("redoable", errBoom)) }()
	for n := 0; n < 2; n = <-queued {
	}
	release()
	wg.Wait()
	if errA != nil || !errors.Is(errB, errBoom) {
		t.Fatalf("writes: %v, %v (want nil, boom)", errA, errB)
	}
	if got := batches(); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("batches %v, want [1 2]", got)
	}
	if !slices.Equal(order, []string{"redoable", "durable"}) {
		t.Fatalf("ran %v, want the redoable write first", order)
	}
	if !has(t, a, "durable") || has(t, b, "redoable") {
		t.Fatal("the failed first write was stored, or the other was not")
	}
}
