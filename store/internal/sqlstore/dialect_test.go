package sqlstore

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/pgdb"
	"github.com/agentmem/agentmem/internal/sqlitedb"
)

// TestListArguments: on SQLite a list parameter is JSON that json_each
// reads back as the values, whatever the strings hold; on PostgreSQL it
// is the slice itself (an array).
func TestListArguments(t *testing.T) {
	lite, pg := dialectOf(sqlitedb.Dialect), dialectOf(pgdb.Dialect)
	strs := []string{"plain", `quo"te`, `back\\slash`, "ünï", "tab\tnew\nline", "\x00nul", ""}
	var gotStrs []string
	if err := json.Unmarshal([]byte(lite.strings(strs).(string)), &gotStrs); err != nil || !slices.Equal(gotStrs, strs) {
		t.Fatalf("strings: %v, %v", gotStrs, err)
	}
	ints := []int64{1, -2, 1 << 62, 0}
	if got := lite.ints(ints); got != "[1,-2,4611686018427387904,0]" {
		t.Fatalf("ints: %v", got)
	}
	if got := lite.ints(nil); got != "[]" {
		t.Fatalf("no ints: %v", got)
	}
	if got, ok := pg.ints(ints).([]int64); !ok || !slices.Equal(got, ints) {
		t.Fatalf("postgres ints: %#v", pg.ints(ints))
	}
	if got := lite.in("seq", 3); got != "seq IN (SELECT value FROM json_each($3))" {
		t.Fatalf("sqlite in: %s", got)
	}
	if got := pg.in("seq", 3); got != "seq = ANY($3)" {
		t.Fatalf("postgres in: %s", got)
	}
}

// TestTimes: SQLite's store keeps INTEGER nanoseconds, PostgreSQL
// timestamptz; both scan back to the same UTC time, NULL to zero.
func TestTimes(t *testing.T) {
	lite, pg := dialectOf(sqlitedb.Dialect), dialectOf(pgdb.Dialect)
	at := time.Date(2026, 11, 24, 12, 0, 0, 123456000, time.FixedZone("x", 3600))
	if got := lite.time(at); got != at.UnixNano() {
		t.Fatalf("sqlite argument: %v", got)
	}
	if got, ok := pg.time(at).(time.Time); !ok || !got.Equal(at) || got.Location() != time.UTC {
		t.Fatalf("postgres argument: %v", pg.time(at))
	}
	if lite.time(time.Time{}) != nil || pg.time(time.Time{}) != nil {
		t.Fatal("the zero time is not NULL")
	}
	for _, v := range []any{at.UnixNano(), at} {
		var got time.Time
		if err := scanTime(&got).Scan(v); err != nil || !got.Equal(at) || got.Location() != time.UTC {
			t.Fatalf("scan %T: %v, %v", v, got, err)
		}
	}
	got := at
	if err := scanTime(&got).Scan(nil); err != nil || !got.IsZero() {
		t.Fatalf("scan NULL: %v, %v", got, err)
	}
	if err := scanTime(&got).Scan("yesterday"); err == nil {
		t.Fatal("a string scanned as a time")
	}
}
