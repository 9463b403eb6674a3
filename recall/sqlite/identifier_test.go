package sqlite

import (
	"context"
	"maps"
	"path/filepath"
	"testing"

	"github.com/agentmem/agentmem/internal/sqldb"
	"github.com/agentmem/agentmem/internal/sqlitedb"
)

func TestIdentifier(t *testing.T) {
	for term, want := range map[string]bool{
		"f9a6dabda26c": true,  // a hash
		"2024112415":   true,  // a long number
		"10436":        true,  // five digits
		"a1b2c":        false, // five bytes, two digits
		"8f1e2":        true,  // five bytes, three digits
		"sha256":       false, // six bytes, half of them digits
		"abcdefg1":     true,  // eight bytes and a digit
		"abcdefgh":     false, // no digit
		"404":          false, // a short number: as common as a word
		"utf8":         false,
		"x86":          false,
		"é1234567":     true,  // letters outside ASCII are letters
		"ABC12345":     false, // never a term: Tokenize lower-cases
		"12345 678":    false, // never a term: a separator
		"":             false,
	} {
		if got := identifier(term); got != want {
			t.Errorf("identifier(%q) = %v, want %v", term, got, want)
		}
	}
}

// TestMigrationDropsIdentifierRows opens a file at schema version 1,
// whose recall_df holds rows of identifiers and words, and checks that
// migration 0002 removes the identifiers' rows that the ASCII rule
// selects and no others.
func TestMigrationDropsIdentifierRows(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "recall.db")
	db, err := sqlitedb.OpenSQLDB(ctx, path, Options{}, migrationsUpTo(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]int64{"f9a6dabda26c": 1, "10436": 2, "sha256": 3, "abcdefgh": 4, "404": 5, "é1234567": 6, "word": 7}
	err = db.Write(ctx, func(ctx context.Context, tx sqldb.Tx) error {
		for term, df := range rows {
			if _, err := tx.Exec(ctx, `INSERT INTO recall_df (tenant, term, df) VALUES ('t', $1, $2)`, term, df); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, db2 := openMigrated(t, ctx, path)
	left := map[string]int64{}
	rs, err := db2.Reader().Query(ctx, `SELECT term, df FROM recall_df`)
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var (
			term string
			df   int64
		)
		if err := rs.Scan(&term, &df); err != nil {
			t.Fatal(err)
		}
		left[term] = df
	}
	rs.Close()
	want := map[string]int64{"sha256": 3, "abcdefgh": 4, "404": 5, "é1234567": 6, "word": 7}
	if !maps.Equal(left, want) {
		t.Errorf("recall_df after the migration = %v, want %v", left, want)
	}
}
