// Package sqlite is the embedded store.Driver (sqlite.Open returns the
// portable store.Store over it): sessions and their logs in
// one local SQLite file, with no server to run. It is the zero-config
// default; when one machine is not enough, move to package postgres (a
// session moves between them with store.Export and store.Import).
//
//	st, err := sqlite.Open(ctx, "/var/lib/agentmem/agentmem.db", sqlite.Options{})
//
// or, through the URL opener this package registers for the sqlite scheme
// (import it for its side effect; see ParseURL for the forms):
//
//	st, err := store.Open(ctx, "sqlite:///var/lib/agentmem/agentmem.db")
//
// The driver is modernc.org/sqlite, a pure-Go SQLite (no cgo), through
// database/sql.
//
// The store's logic is written once for this package and package postgres,
// in store/internal/sqlstore over internal/sqldb. That is sessions,
// branches, idempotent appends and their compaction checks, reads,
// retention, the change feed and import. What is SQLite's own lives here:
// opening the file, the schema and its migrations, appends through the
// file's group committer and the statements kept prepared.
//
// # Durability: pragmas
//
// Every connection runs with
//
//   - journal_mode=WAL: a commit appends to the write-ahead log instead of
//     rewriting pages in place, readers never block the writer nor the
//     writer the readers, and a reader sees one consistent snapshot;
//   - synchronous=FULL: the WAL is fsynced before a commit returns, so an
//     acknowledged Append survives a power loss or kernel crash, not only a
//     crash of the process (NORMAL, the usual WAL setting, may lose the
//     last commits on power loss);
//   - foreign_keys=ON: entries cannot outlive their session, and a session
//     cannot be deleted while a branch still reads its history through it;
//   - busy_timeout (Options.BusyTimeout, 5s by default): a writer that
//     finds another process holding the write lock waits for it instead of
//     failing at once with SQLITE_BUSY;
//   - mmap_size=256MiB on the one write connection: the pages it reads
//     come from a memory map, without a system call and a copy each. The
//     read connections use pread. SQLite empties a connection's page
//     cache and unmaps the file when a read transaction begins after
//     another connection's commit. Under a steady stream of appends, each
//     short read (a session's row, before a context) would map the file
//     again, which costs more CPU than reading its few pages;
//   - cache_size=32MiB on the one write connection: a group of appends, or
//     a batch of the recall index's writes, fits in the page cache instead
//     of spilling pages to the WAL before it commits;
//   - checkpoints in the background: a connection of their own copies the
//     WAL into the file every 200 ms (PASSIVE, beside the writes), rather
//     than the commit that fills 1,000 pages making every writer wait;
//     wal_autocheckpoint=16384 pages bounds the WAL should it fall behind.
//
// TestCrashSafety checks the durability claim the hard way. A child process
// appends as fast as it can and is killed with SIGKILL at a random moment,
// repeatedly. Every acknowledged step is found intact afterwards, with no
// partial append, and the file passes PRAGMA integrity_check.
//
// # Schema and migrations
//
// The schema is versioned by the migrations embedded in the binary
// (migrations/NNNN_name.sql, //go:embed). Open applies the pending ones in
// one write transaction and records each in agentmem_migrations: either all
// are applied or none. The transaction takes the write lock first, so
// processes that open a new file at once migrate one after the other. A
// file migrated by a newer agentmem than this one is refused with
// ErrSchemaTooNew rather than written to.
//
// Tables are STRICT (a value of the wrong type is an error). A session is
// a row of sessions, keyed by PRIMARY KEY (tenant, id): session IDs are
// per tenant. Times are INTEGER nanoseconds since the Unix epoch (the
// store records them at microsecond precision, see storekit.Now). Its log
// is its rows of entries, keyed by PRIMARY KEY (tenant, session_id, seq). A
// partial UNIQUE index on (tenant, session_id, step_id) stores a step once.
// A partial index on compaction entries finds the newest compaction without
// scanning the log. Entry bodies are the JSON of
// store.EncodeStep or store.EncodeCompaction, kept byte for byte as BLOBs:
// an export reads back exactly. Indexes on (tenant | user_id | agent,
// created_at, id) serve List's filters in its order (newest first), and
// one on (tenant, parent_id, created_at, id) a session's branches.
//
// # Branches
//
// A branch records where it was forked (parent_id, fork_seq: its
// provenance, which never changes) and where its inherited history is read
// from (base_id, base_seq). Its own entries are numbered after base_seq. A
// session's visible log is therefore a chain of segments, one per session
// on the way up the bases, each a range of sequence numbers; reads and the
// step-ID lookup of idempotent appends walk it. Deleting a session first
// copies into each branch the entries that branch saw of it (its own
// entries up to the branch's base_seq) and points the branch at its own
// base: the branch loses nothing, and the grandparent's entries are not
// copied.
//
// # Locking and concurrency
//
// Writes go through a single connection and reads through a pool
// (Options.ReadConns). Write transactions start with BEGIN IMMEDIATE: a
// transaction that will write takes SQLite's write lock when it begins,
// so two writers (of this or another process) never both read and then
// deadlock upgrading their locks; the second waits on busy_timeout.
// Within a process, writers queue in Go for the one write connection,
// honouring their contexts, instead of polling SQLite's lock.
//
// Writes are group-committed: one goroutine takes the writes that are
// waiting and runs them in a single transaction, each in a savepoint of
// its own, then commits once, so concurrent appends share one fsync. Each
// keeps its own all-or-nothing semantics and errors (a failed one is
// rolled back to its savepoint); none is acknowledged before the commit.
// With 16 sessions written at once this gives about four times the
// throughput of one commit per append (see bench_test.go). The committer
// is the file's (internal/sqlitedb's Group): the recall index, the facts
// and the blocks kept in the same file write through it too, so an
// append and the index's batch that wait together share a transaction
// and its fsync. To keep the committer's serial work small, the appending
// goroutine encodes its steps before queuing them (the committer only
// splices in the sequence numbers), and statements are prepared once on
// the write connection, not parsed per use.
//
// A Read runs in one read transaction, a snapshot: an append is either
// wholly visible or not at all. With WorkingSet it reads the newest
// compaction entry (by index), the steps that compaction names and the
// entries after it — not the whole log — and decodes large results on
// every core.
//
// # Errors
//
// Input is validated before any transaction (by store.Store, and
// store.ValidateAppendEncoded for an append): bad input is refused with an
// error wrapping agentmem.ErrInvalid and changes nothing. A missing or
// expired session is agentmem.ErrNotFound, a stale ExpectedLastSeq or a taken
// session ID agentmem.ErrConflict, and any use after Close store.ErrClosed.
//
// # Retention
//
// An expired session is ErrNotFound to every operation but Delete (which
// removes it) until Prune deletes it. Prune works one session per
// transaction, so it never holds the write lock for long. It deletes the
// expired sessions, as Delete does. With CoveredBefore, it also deletes the
// step entries older than that which no working set can reach any more: not
// the session's own, nor that of a branch that sees them.
//
// In-memory databases (MemoryPath, or sqlite://?mode=memory) use a single
// connection for everything and skip WAL; they are for tests.
package sqlite
