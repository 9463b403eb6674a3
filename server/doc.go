// Package server is agentmem's HTTP API: sessions, their append-only logs
// of typed steps, the context that fits a token budget, and compaction,
// as JSON over HTTP. `agentmem serve` runs it; any number of servers may
// share one store (PostgreSQL) and serve the same sessions.
//
//	srv, err := server.New(server.Config{Store: st, Logger: logger})
//	...
//	http.ListenAndServe("127.0.0.1:8080", srv)
//
// # Routes
//
// The OpenAPI 3 document, served at GET /v1/openapi.json (and returned by
// OpenAPI), describes every route; a test keeps it in sync with the mux.
//
//	POST   /v1/sessions                   create a session
//	GET    /v1/sessions                   list (user_id, agent, parent_id, page_size, page_token)
//	GET    /v1/sessions/{id}              get
//	DELETE /v1/sessions/{id}              delete
//	POST   /v1/sessions/{id}/fork         branch at a sequence number
//	POST   /v1/sessions/{id}/steps        append steps (typed step JSON)
//	GET    /v1/sessions/{id}/steps        read the log (after, limit, last)
//	POST   /v1/sessions/{id}/messages     append OpenAI chat messages
//	GET    /v1/sessions/{id}/items        read the items (limit, page_size, page_token)
//	GET    /v1/sessions/{id}/context      render (budget, format, tokenizer, truncate)
//	POST   /v1/sessions/{id}/compact      prune or summarize now
//	GET    /healthz /readyz /metrics      operations
//
// # Security
//
// Every request but those of /healthz, /readyz, /metrics and
// /v1/openapi.json (which hold no tenant's data, and which probes and
// scrapers reach without a key) goes through Config.Auth, an
// auth.Authenticator: "Authorization: Bearer <API key>" gives the request
// the key's tenant; a missing key where one is required, or a malformed,
// unknown or revoked one, is 401 with a JSON error and a
// WWW-Authenticate: Bearer challenge. Without Config.Auth every request is
// the default tenant "". Handlers read the tenant with Tenant(r), and
// routes added to the server get the same guard.
//
// Every session belongs to the tenant that created it (a fork to its
// parent's). A session of another tenant is answered 404 on every route,
// byte for byte as a missing session, and nothing is changed; lists show
// only the tenant's sessions; the context cache checks the tenant on every
// use. Session IDs are per tenant: two tenants may each have a session
// "chat-1", and creating a session under an ID another tenant uses
// succeeds and tells nothing of it.
//
// CORS is off unless Config.CORSOrigins lists origins (exact match, no
// wildcard): their preflights get 204 with the API's methods and the
// Authorization, Content-Type, Idempotency-Key and If-Match headers and
// the proxy's X-Agentmem-* request headers (proxy.RequestHeaders), their
// answers expose ETag, Location, Retry-After, WWW-Authenticate and the
// proxy's response headers (proxy.ResponseHeaders); other origins'
// preflights get 403. Cross-origin writes from a browser page of any
// origin not listed are refused (403, http.CrossOriginProtection), CORS or
// not, so a web page cannot post to a server on localhost.
//
// # Writes
//
// An append is decoded and checked completely, then written to the log in
// one atomic store append: all of its steps or none. An Idempotency-Key
// names one request to the session on every route (POST /steps,
// /messages, /items, and the MCP append tool): the append records the
// key with a fingerprint of the request (the route and its normalized
// body, store.StepsFingerprint, store.MessagesFingerprint,
// store.Fingerprint for items) in the same transaction, so a client that
// retries after a timeout or a 503 stores its request once and is
// answered as the first time (seqs, compaction_seq, updated), while a
// different request with the key, on any route (a changed step, more or
// fewer steps or messages, another compaction), is refused with 409
// idempotency_key_reused and nothing is stored (see
// store.AppendRequest). Steps without an ID get KEY/INDEX from the key,
// KEY/0 for a single step, as messages and items do. In sessions appended
// to before keys were recorded, the step IDs decide: a request whose steps
// are all stored, each the same but for its number and time, is a retry.
// If-Match carries the session's
// expected last sequence number (every write answers with it as the
// ETag): a mismatch is 409, with the current number, and changes nothing.
//
// A compaction record sent with POST /steps is checked like the rest: its
// working list is required and must name steps of the log, and it must
// keep the pinned steps (every system prompt and the first task) unless
// its removed list names them; otherwise 400 and nothing changes.
//
// # Tool calls over HTTP, item by item
//
// POST /messages folds chat messages into steps (agentmem.FoldMessages,
// through sessions.Service.AppendMessages, against the working set the
// server's context cache holds), and messages may come one request at a
// time, as agent frameworks save them. An assistant message whose tool
// calls have no results yet is stored durably, in the log, as a pending
// action; tool messages sent later, in any number of requests and to any
// server of a deployment, complete it, each with a compaction entry that
// is an amendment: it keeps the working set and carries only the action's
// copy with the new result (GET /steps shows it with "amend": true), so a
// completion costs the same however long the session. Those appends are
// conditional on the working set read, so concurrent results for one
// action are all kept (the loser of a race reads again and retries; see
// Busy sessions below). The context leaves pending actions out and
// lists them under "pending". A tool message whose call nobody made is
// 400; one that repeats its call's result is a retry that stores nothing;
// one with a different result is 409 tool_result_conflict.
// ?flush_pending=true records every call still pending as failed.
//
// POST /pop removes the newest message of the working set and returns it
// (the Agents SDK's pop_item; see sessions.Service.Pop and agentmem.PopMessage for
// what the newest message is for each step kind), recorded as a
// compaction entry so the log keeps what happened. Popping a tool result
// makes its call pending again.
//
// # The context cache
//
// The context route renders from an LRU cache of session memories bounded
// in bytes (Config.CacheBytes: the steps' text and the renderings each
// memory keeps, estimated high; a session larger than the bound is served
// without being kept), so each step is rendered and counted once per
// format and tokenizer, not once per request. The log stays the truth:
// before each use a cached memory checks the session's last sequence
// number (one Get) and, if another request or another server appended,
// reads just the new entries and adds them, keeping the counts it has. A
// compaction entry rebuilds the memory from a working-set read. So every
// context reflects every append acknowledged before it, on any server.
//
// A context is bounded by Config.MaxContextTokens (1,000,000 by default):
// a request without a budget is fitted to it, rendering only the steps
// that fit and listing the others as dropped, and a larger budget is a
// 400. The steps route reads a whole log, by pages. Every other list is
// paged too, so no answer grows with a session or an index: a session's
// items (api.DefaultItemsPageSize items, at most api.MaxItemsPageBytes, a
// page token that reads on as of the first page), a user's facts
// (api.DefaultFactsPageSize) and a recall search's hits (at most
// api.MaxRecallSearchBytes, with next_offset).
//
// Compactions run on a memory bound to the session (store.OpenMemory):
// the journal records them atomically, and only if nothing was appended
// since the memory was loaded; a compaction that loses such a race is
// reloaded and run again (see Busy sessions).
//
// # Busy sessions
//
// A write whose client states no position in the log (no If-Match) but
// that the server appends conditionally on what it read (a tool result
// completing a stored call, a pop, a clear, a compaction, the items
// route's outputs, the proxy's recording) is retried by the server when
// another writer gets ahead of it: each try brings the session up to
// date again (the context cache reads what the other writer appended),
// within the bound of sessions.Config.Retry (store.DefaultRetry: 50
// tries within 3 seconds, with jittered waits growing to 64 ms, ending
// early with the request's context). Such writes of one server take
// turns per session, so they do not race one another. When every try
// lost, the answer is 503 unavailable with Retry-After, nothing stored
// (store.ErrContended). A write with If-Match is tried once: its
// conflict is the answer, 409 with the current ETag. The metrics
// agentmem_write_retries_total and agentmem_write_contended_total count
// the retries and the give-ups by operation.
//
// # Errors
//
// Every error is {"error":{"code","message","field"}} with the status of
// its kind: 400 invalid input (malformed JSON, a wrong type, an unknown
// field or step type, an orphan tool result, invalid UTF-8, a bad ID), 401
// no valid API key, 403 a cross-origin write refused, 404 no such session
// (or another tenant's), 409 conflict (or idempotency_key_reused,
// tool_result_conflict, nothing_to_pop), 413 body too large, 415 not
// application/json, 422 budget too small (with the tokens required), 500
// a failure nobody expected (a bug: the message gives nothing away, the
// log has the cause) or a read of a damaged record (one whose stored form
// does not decode: the message names it), 502 the LLM summarizer failed,
// 503 a transient failure of the store (busy, unreachable, timed out, out
// of disk space or memory, shutting down: the backends mark it
// agentmem.ErrUnavailable) or a session too busy for a write without
// If-Match (see Busy sessions), with Retry-After. No decoding or check of a
// request's input is a 5xx. A panic is recovered into a 500 and logged
// with its stack.
//
// # Damaged records
//
// A damaged record fails only the reads of it: the routes that list
// sessions, search recall or list facts leave it out and name it in their
// "damaged" member, and the server logs it and counts it
// (agentmem_damaged_records_total). /readyz asks the store whether it can
// serve (store.Pinger), never whether a record decodes.
//
// # Strict decoding
//
// Request bodies are decoded strictly, and refused with 400 naming the
// field's path: a member the OpenAPI document does not list, or whose
// name differs from one only in letter case; a required member missing or
// null; a key repeated in one object (encoding/json would keep the last);
// invalid UTF-8 or a lone UTF-16 surrogate escape (it would store U+FFFD).
// An optional member given as null is taken as absent. Query parameters
// must be known, given once, and UTF-8; If-Match and Idempotency-Key, when
// present, must not be blank or repeated.
package server
