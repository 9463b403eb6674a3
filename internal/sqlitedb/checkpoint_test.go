package sqlitedb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheckpointer checks that a file's pages are checkpointed in the
// background: a write well under the automatic bound grows the WAL, and
// the checkpointer then copies its pages into the database file, without
// another write; Close stops it.
func TestCheckpointer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ck.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	if _, err := db.W.Exec(`CREATE TABLE t (x TEXT)`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.W.Begin()
	if err != nil {
		t.Fatal(err)
	}
	row := strings.Repeat("x", 4000)
	for range 500 { // about 2 MB: 500 pages, under the automatic bound
		if _, err := tx.Exec(`INSERT INTO t VALUES (?)`, row); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	before := size()
	deadline := time.Now().Add(10 * time.Second)
	for size() < before+1<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("the database file is %d bytes 10s after a 2 MB commit: no checkpoint", size())
		}
		time.Sleep(20 * time.Millisecond) // polling the file, not a synchronization
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-db.checkpointsDone:
	default:
		t.Error("Close returned with the checkpointer running")
	}
}
