// Package postgres keeps agentmem's API keys (auth.KeyStore) in a
// PostgreSQL database, in the same schema as the sessions when given the
// same URL: its table, api_keys, is migration component "keys" of the
// shared agentmem_migrations table (internal/migrate). Any number of
// servers share the keys.
//
// Importing the package registers the "postgres" and "postgresql"
// schemes with auth.Open; the URL's schema parameter names the schema,
// as for the session store.
//
// On a Citus coordinator (a database with the citus extension), api_keys
// is a reference table: a copy on every node, read locally, since a key is
// looked up before its tenant is known.
//
// The key store itself (queries, errors) is written once for SQLite and
// PostgreSQL, in auth/internal/sqlkeys over internal/sqldb; this package
// holds the PostgreSQL schema and its Citus layout, and connects.
package postgres
