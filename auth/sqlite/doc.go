// Package sqlite keeps agentmem's API keys (auth.KeyStore) in a SQLite
// database, the same file as the sessions when given the same path: its
// table, api_keys, is migration component "keys" of the shared
// agentmem_migrations table (internal/migrate).
//
// Importing the package registers the "sqlite" scheme with auth.Open.
//
// The key store itself (queries, errors) is written once for SQLite and
// PostgreSQL, in auth/internal/sqlkeys over internal/sqldb; this package
// holds the SQLite schema and opens the file.
package sqlite
