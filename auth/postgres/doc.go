// Package postgres keeps agentmem's API keys (auth.KeyStore) in a
// PostgreSQL database, in the same schema as the sessions when given the
// same URL: its table, api_keys, is migration component "keys" of the
// shared agentmem_migrations table (internal/migrate). Any number of
// servers share the keys.
//
// Importing the package registers the "postgres" and "postgresql"
// schemes with auth.Open; the URL's schema parameter names the schema,
// as for the session store.
package postgres
