package sqlitedb

import (
	"context"
	"database/sql"
	"time"
)

// Checkpoints. In WAL mode a commit appends pages to the WAL, and a
// checkpoint copies them back into the database file. SQLite's default is
// to checkpoint in the commit that takes the WAL past 1,000 pages, on the
// connection that commits. With one write connection for the whole
// process, every writer would then wait behind a copy of 4 MB of pages and
// its fsync.
//
// A file's pools instead get a checkpointer: a connection of its own that
// runs PRAGMA wal_checkpoint(PASSIVE) every checkpointEvery. A passive
// checkpoint copies what no reader still needs without taking the write
// lock, so writes go on meanwhile. The write connection keeps an automatic
// checkpoint, at autoCheckpointPages, only as a bound on the WAL should
// the checkpointer fall behind (a reader holding an old snapshot, a
// stopped process). Checkpoints change nothing of durability: a commit is
// durable in the WAL (synchronous=FULL), whenever it is copied.
const (
	checkpointEvery     = 200 * time.Millisecond
	autoCheckpointPages = 16384 // 64 MiB of 4 KiB pages
)

// checkpointer runs passive checkpoints on db until stop is closed, then
// closes db and closes done.
func checkpointer(db *sql.DB, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer db.Close()
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		// A failure (the file busy in another process's checkpoint, say)
		// leaves the pages for the next round or the automatic bound.
		_, _ = db.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
		cancel()
	}
}
