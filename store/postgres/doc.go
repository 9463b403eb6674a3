// Package postgres is the store.Driver for PostgreSQL (Open returns the
// portable store.Store over it): the backend for
// scaling out, where any number of stateless agentmem servers share one
// database and may write to the same session at once.
//
//	st, err := postgres.Open(ctx, "postgres://agentmem@db.internal/agentmem", postgres.Options{})
//
// or, through the URL openers this package registers for the postgres://
// and postgresql:// schemes (import it for its side effect):
//
//	st, err := store.Open(ctx, "postgres://agentmem@db.internal/agentmem?schema=agents")
//
// It uses github.com/jackc/pgx/v5 and a pgxpool connection pool. It needs
// no extension: everything here runs on plain PostgreSQL (tested with 15),
// without pgvector, which only the semantic recall of embeddings would use.
// It runs on a Citus cluster too (tested with Citus 13.2), with its tables
// distributed by tenant: see Citus below.
//
// The store's logic (sessions, branches, idempotent appends and their
// compaction checks, reads, retention, the change feed, import) is
// shared with package sqlite in store/internal/sqlstore over
// internal/sqldb. It uses PostgreSQL's SQL where that differs (arrays,
// row locks, the feed's statements and transaction IDs). What is
// PostgreSQL's own lives here: the pool, the schema and its migrations,
// the pipelined append and COPY for import.
//
// # Schema and migrations
//
// The tables (sessions, entries, feed, feed_cursors, feed_leases,
// agentmem_migrations) live in one schema, named by Options.Schema or the
// "schema" URL parameter. It is created when missing and set as the
// search_path of every pooled connection, so several stores (tenants,
// tests) can share a database without seeing one another.
// Empty means the database's default search_path.
//
// The schema is versioned by the migrations embedded in the binary
// (migrations/NNNN_name.sql). Open applies the pending ones in one
// transaction that first takes an advisory lock (pg_advisory_xact_lock)
// derived from the schema name. Servers starting at once migrate one
// after another, the later ones finding nothing to do, and a failed
// migration leaves nothing behind. A schema
// migrated by a newer agentmem than this one is refused with
// ErrSchemaTooNew rather than written to.
//
// # Tables
//
// A session is a row of sessions, keyed by PRIMARY KEY (tenant, id):
// session IDs are per tenant, and the tenant leads every key, so a
// distributed PostgreSQL can shard by it. Its log is its rows of entries,
// keyed by PRIMARY KEY (tenant, session_id, seq) — the unique constraint
// on session and sequence number — with UNIQUE (tenant, session_id,
// step_id) so a step is stored once. A partial index on compaction
// entries finds a session's newest compaction without scanning its log.
// Indexes on (tenant | user_id | agent, created_at, id) serve List's
// filters in its order, and one on (tenant, parent_id, created_at, id) a
// session's branches.
//
// Entry bodies are the step's (or compaction record's) JSON exactly as
// store.EncodeStep produced it, kept as bytea. Not jsonb: it reorders
// object keys, drops duplicate ones and normalizes numbers, so an export
// would not read back byte for byte. Not text: its content depends on the
// database's encoding. Nothing queries inside a body.
// Session metadata is JSON text too (jsonb cannot hold the escape \u0000).
//
// # Branches
//
// A branch records where it was forked (parent_id, fork_seq: its
// provenance, never changed) and where its inherited history is read from
// (base_id, base_seq). A branch's own entries are numbered after base_seq;
// reading it walks the chain of bases in one recursive query and reads
// each session's share of the log. Deleting a session copies the entries
// its branches inherited from it into those branches and points them at
// its own base, so a branch never loses history.
//
// # Concurrency
//
// Every write is one transaction (read committed). An append locks its
// session's row with SELECT ... FOR NO KEY UPDATE, so appenders of one
// session — in any number of processes — queue on that row while readers,
// appenders of other sessions and foreign-key checks do not. Under the
// lock it checks ExpectedLastSeq (ErrConflict), finds the request's step
// IDs already in the visible log (a retry: their seqs are returned, nothing
// is stored), numbers the new entries from last_seq+1, and inserts them
// and moves last_seq in one statement. A unique violation, which the lock
// makes impossible short of a bug, would be reported as ErrConflict, never
// as a duplicate. Delete locks the session FOR UPDATE and then its
// branches; creating a branch holds its parent FOR KEY SHARE, so a parent
// cannot vanish under a new branch. A transaction PostgreSQL aborts as a
// deadlock victim is run again (it changed nothing).
//
// Reads run in a read-only repeatable-read transaction: a Read sees the
// session row and every part of its log in one snapshot. With WorkingSet
// it reads the newest compaction entry, the steps that compaction names
// and the entries after it, not the whole log.
//
// # The change feed
//
// The feed (store.Feed) is the feed table, written by the same statements
// that make each change, not by triggers, which Citus cannot run on
// sharded tables. The append's one statement inserts its entries, their
// feed rows and the new last_seq. Creating a branch, deleting a session
// (and the history it hands to its branches) and importing write theirs in
// their transaction. A row's xid is its
// transaction's ID (the column default, pg_current_xact_id()) and pos its
// place in the feed. Readers order changes by (xid, pos) and read only
// those whose xid is below the xmin of their snapshot: every transaction
// below it has ended, so no change can commit later behind a cursor that
// has passed it. A long-running transaction holds the feed back until it
// ends.
//
// The leases of exclusive consumers (store.Leaser) are rows of
// feed_leases, taken by one conditional upsert (the row is missing, the
// taker's, or expired by the store's clock). A leased cursor is saved
// under a lock of its lease's row, so a follower that takes the lease
// over waits for the old holder's save in flight and reads the cursor
// after it.
//
// # Citus
//
// On a Citus coordinator (a database with the citus extension) a new
// schema is laid out for Citus (internal/migrate). Sessions, entries and
// feed are distributed by tenant in one co-location group with the schema's
// recall index and facts tables (see those packages), so one tenant's
// sessions, log, changes, documents and facts live on one worker. The
// tables feed_cursors, feed_leases and agentmem_migrations stay on the
// coordinator. The shard count is Citus's citus.shard_count when the
// tables are created (32 by default; a URL parameter
// citus.shard_count=N sets it for the connection). A database that held
// agentmem's tables before it got the extension keeps them as they are.
// Connect agentmem to the coordinator only.
//
// Every request's statements name the tenant, so the coordinator routes
// each to the one worker holding the tenant's shards. The whole
// transaction runs there: Citus commits it on the worker (one phase) in
// its pre-commit step, before the coordinator's own commit. That is what
// keeps the feed correct on Citus. The feed's xid is evaluated on the
// coordinator (Citus evaluates functions of an INSERT there), so it is
// the coordinator's transaction ID. Readers compare it with the xmin of a
// coordinator snapshot: when the coordinator's transaction has ended, its
// worker's has committed. Worker transaction IDs never enter
// the feed, so they may differ from node to node, and shard moves copy
// the xid column as data. A transaction that wrote to two workers would
// commit with two-phase commit, whose workers commit after the
// coordinator: the store never does that (a prune deletes each session in
// a transaction of its own). Citus also commits in two phases a
// transaction that wrote through two connections to one worker, which an
// INSERT ... SELECT followed by another write does (Citus runs the insert
// on a connection of its own): the store writes its entries and feed
// rows as VALUES lists instead. TestCitusSingleShard checks every
// request's statements go to one worker and commit in one phase. Reading the feed and trimming it
// (SaveCursor) run on every shard; they serve the background follower,
// not requests.
//
// Shards may move while the store runs (citus_rebalance_start; see
// TestCitusRebalance): writes to a moving shard wait at the switch-over,
// and reads go to the old placement until it. An append that locked its
// session's row on the old placement just before the switch-over inserts
// on the new one, where another process's append to the same session may
// have gone first. Its insert then meets a unique violation, and the
// append runs again (as it does after a deadlock), taking its turn.
//
// The workers must commit synchronously (synchronous_commit on,
// PostgreSQL's default, or local, remote_write, remote_apply). Citus ends
// a move once the new placement has replayed the source's WAL up to
// pg_current_wal_lsn(), the WAL write position. A commit made with
// synchronous_commit off may not have reached it yet; such an append,
// acknowledged and read back, is then lost with the old placement. The
// worker's setting is what counts, since Citus commits on the worker
// through its own connections. The store leaves it to the operator:
// Store.AsyncCommits names the servers and workers that commit
// asynchronously (agentmem serve warns at start), and docs/operations.md
// says how to check by hand.
//
// # Connection poolers
//
// The store sets its schema as the search_path start-up parameter of each
// connection, and pgx caches prepared statements per connection. Both
// assume that a transaction runs on a server session that keeps them, as
// a direct connection or a session-pooling proxy does. Behind a
// transaction-pooling proxy, leave Options.Schema empty (give the role the
// schema as its search_path instead) and add default_query_exec_mode=exec
// to the URL.
//
// # Errors
//
// Input is validated (by store.Store, and store.ValidateAppendEncoded for an append) before any SQL runs, and changes
// nothing when bad (agentmem.ErrInvalid). PostgreSQL's text cannot hold
// the byte 0, which is valid UTF-8, so names and step IDs that contain it
// are refused as invalid too. A missing or expired session is
// agentmem.ErrNotFound. Any other failure — a refused connection, a server
// restarting, a statement timeout — is returned wrapped (errors.As finds
// the *pgconn.PgError or the network error), never disguised as one of
// those, so a server can answer it with 503. After Close every call
// returns store.ErrClosed.
package postgres
