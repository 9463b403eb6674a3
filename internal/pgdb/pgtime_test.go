package pgdb

import (
	"context"
	"testing"
	"time"
)

// TestScanTimePostgres scans timestamptz values of PostgreSQL, NULL and
// infinity among them, into the Dialect's ScanTime, and checks that it
// costs no more allocations than scanning into a *time.Time (pgx's
// sql.Scanner path boxes each value).
func TestScanTimePostgres(t *testing.T) {
	pool, _ := openTest(t)
	db := NewSQLDB(pool) // closed with the pool
	ctx := context.Background()
	at := time.Date(2026, 11, 24, 12, 30, 1, 123456000, time.UTC)
	var got, null time.Time
	null = time.Now()
	if err := db.Reader().QueryRow(ctx, `SELECT $1::timestamptz, NULL::timestamptz`, at).
		Scan(Dialect.ScanTime(&got), Dialect.ScanTime(&null)); err != nil {
		t.Fatal(err)
	}
	if !got.Equal(at) || got.Location() != time.UTC || !null.IsZero() {
		t.Fatalf("scanned %v (%v) and %v; want %v in UTC and the zero time", got, got.Location(), null, at)
	}
	if err := db.Reader().QueryRow(ctx, `SELECT 'infinity'::timestamptz`).Scan(Dialect.ScanTime(&got)); err == nil {
		t.Fatalf("infinity scanned as %v", got)
	}
	// The allocations that each row adds to a query of n rows, scanned
	// into dest.
	perRow := func(dest func() any) float64 {
		scan := func(n int) float64 {
			return testing.AllocsPerRun(5, func() {
				rows, err := db.Reader().Query(ctx, `SELECT now() + i * interval '1 second' FROM generate_series(1, $1::int) i`, n)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				for rows.Next() {
					if err := rows.Scan(dest()); err != nil {
						t.Fatal(err)
					}
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
			})
		}
		return (scan(65) - scan(1)) / 64
	}
	plain := perRow(func() any { return &got })
	if st := perRow(func() any { return Dialect.ScanTime(&got) }); st > plain {
		t.Errorf("ScanTime costs %.2f allocations a row, a *time.Time %.2f", st, plain)
	}
}
