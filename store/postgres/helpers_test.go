package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/store"
)

// testURL returns the URL of the test database; the test is skipped (or,
// in CI, fails) without one.
func testURL(t testing.TB) string {
	t.Helper()
	return testenv.PostgresURL(t)
}

// freshSchema returns a new schema name and drops the schema (if it was
// created) when the test ends.
func freshSchema(t testing.TB, url string) string { t.Helper(); return testenv.FreshSchema(t, url) }

// openTest opens a store on a fresh schema of the test database, closed
// (and the schema dropped) when the test ends.
func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	return openAt(t, testURL(t), opts)
}

// openAt is openTest on the database at url.
// driverOf returns the driver of a store of this package.
func driverOf(t testing.TB, st *store.Store) *Store {
	t.Helper()
	var d *Store
	if !st.As(&d) {
		t.Fatalf("%v is not a store of package postgres", st)
	}
	return d
}

func openAt(t testing.TB, url string, opts Options) *Store {
	t.Helper()
	if opts.Schema == "" {
		opts.Schema = freshSchema(t, url)
	}
	st, err := OpenDriver(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// execSQL runs statements on the store's schema outside the store, to
// inspect or damage its tables.
func execSQL(t testing.TB, st *Store, sql string, args ...any) {
	t.Helper()
	if _, err := st.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", strings.TrimSpace(sql), err)
	}
}

// queryInt runs a query that returns one integer.
func queryInt(t testing.TB, st *Store, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := st.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", strings.TrimSpace(sql), err)
	}
	return n
}
