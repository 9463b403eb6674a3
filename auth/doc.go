// Package auth is agentmem's API keys and tenants: who a request to the
// server is, and which tenant's data it may reach.
//
// # Keys
//
// An API key is a bearer token, "am_" + a 12-character public key ID +
// "_" + 43 characters of a 256-bit random secret (base64url):
//
//	am_3f9c0a7d21be_Q2x5...   (59 characters)
//
// The key ID is not secret. `agentmem keys list` shows it and
// `agentmem keys revoke ID` takes it. The whole token is shown once, when
// the key is created, and never stored. A KeyStore keeps its SHA-256,
// since a slow password hash buys nothing for 256 random bits. Verify
// compares hashes in constant time. Each key belongs to one tenant and
// has an optional name, its creation and last-use times and, once
// revoked, its revocation time. A revoked key stays listed and never
// works again.
//
// # Backends
//
// KeyStore is the small interface of a key database. MemStore keeps keys
// in memory (tests, mem://). Packages auth/sqlite and auth/postgres keep
// them in the same database as the sessions (migration component "keys").
// So `agentmem keys` and `agentmem serve` given one --store URL see the
// same keys. Open opens a KeyStore by URL, like store.Open; package
// authtest is the conformance suite every backend runs.
//
// # Requests
//
// An Authenticator decides who sends an HTTP request. It is the tenant of
// the key in "Authorization: Bearer <key>" or, when keys are not required,
// the default tenant "" for a request without one. Keys are required when
// the Authenticator is told so (the server listens on a non-loopback
// address, or --require-keys). They are always required as soon as the key
// store holds any key, revoked ones included. So creating a key turns
// enforcement on, and revoking one never turns it off. Anonymous requests
// must also be addressed to a loopback host name (Host: localhost,
// 127.0.0.1, [::1]). That keeps out a web page that rebinds its DNS name
// to 127.0.0.1.
//
// Handlers read the tenant with TenantFrom(r.Context()). Every piece of
// data a handler reaches must belong to that tenant. Data of another
// tenant is answered as if it did not exist (404), never 403.
package auth
