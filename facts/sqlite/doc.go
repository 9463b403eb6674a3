// Package sqlite is the facts.Store in a SQLite file (modernc.org/sqlite,
// pure Go), opened with internal/sqlitedb: one writer connection and a
// pool of readers, WAL, durable commits. Its tables (facts, facts_audit)
// are migrated as component "facts" of agentmem_migrations, so it can
// share one database file with the session store and the recall index.
//
// Importing the package registers the "sqlite" scheme with facts.Open:
//
//	import _ "github.com/agentmem/agentmem/facts/sqlite"
//
//	st, err := facts.Open(ctx, "sqlite:///var/lib/agentmem/agentmem.db")
//
// Per-user serialization comes from SQLite's single writer: every Update
// is a write transaction begun with BEGIN IMMEDIATE, so concurrent
// extractions for one user, in one process or several, run one after the
// other and never add the same fact twice. The Updates of one process
// commit together (internal/sqlitedb's group writer: one transaction, each
// Update in a savepoint of its own, so one that fails leaves the others).
//
// The store itself (queries, Update's checks, errors) is written once for
// SQLite and PostgreSQL, in facts/internal/sqlfacts over internal/sqldb;
// this package holds the SQLite schema and opens the file.
package sqlite
