// Package postgres is the facts.Store over PostgreSQL (pgx), which any
// number of agentmem servers can share. Its tables (facts, facts_users,
// facts_audit) are migrated as component "facts" of agentmem_migrations,
// in an optional schema shared with the other components.
//
// Importing the package registers the "postgres" and "postgresql" schemes
// with facts.Open:
//
//	import _ "github.com/agentmem/agentmem/facts/postgres"
//
//	st, err := facts.Open(ctx, "postgres://agentmem@db.internal/agentmem?schema=tenant_a")
//
// Per-user serialization is in the database: every Update locks the
// user's row of facts_users (SELECT ... FOR UPDATE) before it reads the
// user's facts, so concurrent extractions for one user, on any server,
// run one after the other and never add the same fact twice, while other
// users' updates proceed in parallel. No extension is needed.
//
// On a Citus coordinator (a database with the citus extension) a new
// schema's tables are distributed by tenant, co-located with the session
// store's (see internal/migrate and store/postgres): every statement names
// the tenant, so an update runs on one worker.
//
// The store itself (queries, Update's checks, errors) is written once for
// SQLite and PostgreSQL, in facts/internal/sqlfacts over internal/sqldb;
// this package holds the PostgreSQL schema and its Citus layout, and
// connects.
package postgres
