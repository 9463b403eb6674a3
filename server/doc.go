// Package server is agentmem's HTTP API: sessions, their append-only logs
// of typed steps, the context that fits a token budget, and compaction,
// as JSON over HTTP. It also serves recall, users' facts, memory blocks,
// the LLM proxy and, when configured, MCP. `agentmem serve` runs it. Any
// number of servers may share one store (PostgreSQL) and serve the same
// sessions.
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
//	POST   /v1/sessions/{id}/pop          remove the newest message
//	POST   /v1/sessions/{id}/items        append items (the Agents SDK's session)
//	GET    /v1/sessions/{id}/items        read the items (limit, page_size, page_token)
//	POST   /v1/sessions/{id}/items/pop    remove the newest item
//	DELETE /v1/sessions/{id}/items        clear the items
//	GET    /v1/sessions/{id}/context      render (budget, format, tokenizer, truncate, facts, recall)
//	POST   /v1/sessions/{id}/compact      prune or summarize now
//	/v1/recall...                         recall documents and search
//	/v1/users/{user}...                   a user's facts and forgetting
//	/v1/users/{user}/blocks...            a user's memory blocks
//	/v1/sessions/{id}/blocks...           a session's memory blocks
//	POST   /v1/chat/completions           the LLM proxy (OpenAI)
//	POST   /v1/messages                   the LLM proxy (Anthropic)
//	GET    /healthz /readyz /metrics      operations
//
// # Security
//
// /healthz, /readyz, /metrics and /v1/openapi.json need no key: they hold
// no tenant's data, and probes and scrapers call them. Every other request
// goes through Config.Auth, an auth.Authenticator. "Authorization: Bearer
// <API key>" gives the request the key's tenant. A key missing where one
// is required, or malformed, unknown or revoked, is 401 with a JSON error
// and a WWW-Authenticate: Bearer challenge. Without Config.Auth every
// request is the default tenant "". Handlers read the tenant with
// Tenant(r), and routes added to the server get the same guard.
//
// Every session belongs to the tenant that created it (a fork to its
// parent's). A session of another tenant is answered 404 on every route,
// byte for byte as a missing session, and nothing is changed. Lists show
// only the tenant's sessions, and the context cache checks the tenant on
// every use. Session IDs are per tenant: two tenants may each have a
// session "chat-1". Creating a session under an ID another tenant uses
// succeeds and tells nothing of it.
//
// CORS is off unless Config.CORSOrigins lists origins (exact match, no
// wildcard). Their preflights get 204 with the API's methods and the
// request headers it reads: Authorization, Content-Type,
// Idempotency-Key, If-Match and the proxy's (proxy.RequestHeaders). Their
// answers expose ETag, Location, Retry-After, WWW-Authenticate and the
// proxy's response headers (proxy.ResponseHeaders). Other origins'
// preflights get 403. Cross-origin writes from a browser page of an
// origin not listed are refused (403, http.CrossOriginProtection), CORS or
// not, so a web page cannot post to a server on localhost.
//
// # Writes
//
// An append is decoded and checked completely, then written to the log in
// one atomic store append: all of its steps or none.
//
// An Idempotency-Key names one request to the session on every append
// route (POST /steps, /messages, /items, and the MCP append tool). The
// append records the key in the same transaction, with a fingerprint of
// the route and its normalized body (store.StepsFingerprint,
// store.MessagesFingerprint, store.Fingerprint for items). A client that
// retries after a timeout or a 503 thus stores its request once, and is
// answered as the first time (seqs, compaction_seq, updated). A different
// request with the same key, on any route, is refused with 409
// idempotency_key_reused and nothing is stored (see store.AppendRequest).
// Steps without an ID get KEY/INDEX from the key, KEY/0 for a single
// step, as messages and items do. Where the log recorded no key, the step
// IDs decide: a request whose steps are all stored, each the same but for
// its number and time, is a retry.
//
// If-Match carries the session's expected last sequence number, which
// every write answers as the ETag. A mismatch is 409, with the current
// number, and changes nothing.
//
// A compaction record sent with POST /steps is checked like the rest. Its
// working list is required and must name steps of the log. It must keep
// the pinned steps (every system prompt and the first task) unless its
// removed list names them. Otherwise it is 400 and nothing changes.
//
// # Tool calls over HTTP, item by item
//
// POST /messages folds chat messages into steps (agentmem.FoldMessages,
// through sessions.Service.AppendMessages, against the working set the
// server's context cache holds). Messages may come one request at a time,
// as agent frameworks save them.
//
// An assistant message whose tool calls have no results yet is stored in
// the log as a pending action. Tool messages sent later complete it, in
// any number of requests and to any server of a deployment. Each
// completion is a compaction entry that is an amendment: it keeps the
// working set and carries only the action's copy with the new result (GET
// /steps shows it with "amend": true). A completion thus costs the same
// however long the session. These appends are conditional on the working
// set read, so concurrent results for one action are all kept: the loser
// of a race reads again and retries (see Busy sessions).
//
// The context leaves pending actions out and lists them under "pending".
// A tool message whose call nobody made is 400. One that repeats its
// call's result is a retry that stores nothing; one with a different
// result is 409 tool_result_conflict. ?flush_pending=true records every
// call still pending as failed.
//
// POST /pop removes the newest message of the working set and returns it
// (the Agents SDK's pop_item). sessions.Service.Pop and
// agentmem.PopMessage say what the newest message is for each step kind.
// The pop is recorded as a compaction entry, so the log keeps what
// happened. Popping a tool result makes its call pending again.
//
// # The context cache
//
// The context route renders from an LRU cache of session memories,
// bounded in bytes by Config.CacheBytes. A memory's size is its steps'
// text and its renderings, estimated high; a session larger than the
// bound is served without being kept. Each step is thus rendered and
// counted once per format and tokenizer, not once per request.
//
// The log stays the truth. Before each use a cached memory reads the
// session's last sequence number (one Get). If another request or server
// appended, it reads just the new entries and adds them, keeping the
// counts it has. A compaction entry rebuilds the memory from a
// working-set read. So every context reflects every append acknowledged
// before it, on any server.
//
// A context is bounded by Config.MaxContextTokens (DefaultMaxContextTokens
// when zero). A request without a budget is fitted to it: only the steps
// that fit are rendered, and the others are listed as dropped. A larger
// budget is 400.
//
// No answer grows with a session or an index. The steps route reads a
// whole log by pages, and every other list is paged too. A session's
// items come api.DefaultItemsPageSize at a time, at most
// api.MaxItemsPageBytes, with a page token that reads on as of the first
// page. A user's facts come api.DefaultFactsPageSize at a time. A recall
// search's hits are at most api.MaxRecallSearchBytes, with next_offset.
//
// Compactions run on a memory bound to the session (store.OpenMemory).
// The journal records a compaction atomically, and only if nothing was
// appended since the memory was loaded. A compaction that loses such a
// race is reloaded and run again (see Busy sessions).
//
// # Busy sessions
//
// Some writes state no position in the log (no If-Match), yet the server
// appends them conditionally on what it read. They are a tool result
// completing a stored call, a pop, a clear, a compaction, the items
// route's outputs and the proxy's recording. When another writer gets ahead of such a write,
// the server retries it, and each try brings the session up to date again
// (the context cache reads what the other writer appended). The tries
// are bounded by sessions.Config.Retry (store.DefaultRetry), and end
// early with the request's context.
//
// Such writes of one server take turns per session, so they do not race
// one another. When every try lost, the answer is 503 unavailable with
// Retry-After, and nothing is stored (store.ErrContended). A write with
// If-Match is tried once: its conflict is the answer, 409 with the
// current ETag. The metrics agentmem_write_retries_total and
// agentmem_write_contended_total count the retries and the give-ups by
// operation.
//
// # Errors
//
// Every error is {"error":{"code","message","field"}}, with the status of
// its kind:
//
//   - 400: invalid input (malformed JSON, a wrong type, an unknown field or
//     step type, an orphan tool result, invalid UTF-8, a bad ID).
//   - 401: no valid API key. 403: a cross-origin write refused.
//   - 404: no such session, or another tenant's.
//   - 409: a conflict (or idempotency_key_reused, tool_result_conflict,
//     nothing_to_pop).
//   - 413: the body is too large. 415: the body is not application/json.
//   - 422: the budget is too small (with the tokens required).
//   - 500: a failure nobody expected, or a read of a damaged record (one
//     whose stored form does not decode; the message names it). For a bug
//     the message gives nothing away, and the log has the cause.
//   - 501: the server was started without what the route needs, such as
//     recall or facts (not_configured).
//   - 502: the model failed (summarizer_failed, extraction_failed).
//   - 503, with Retry-After: a transient failure of the store (busy,
//     unreachable, timed out, out of disk space or memory, shutting down:
//     the backends mark it agentmem.ErrUnavailable), or a session too busy
//     for a write without If-Match (see Busy sessions).
//
// No decoding or check of a request's input is a 5xx. A panic is
// recovered into a 500 and logged with its stack.
//
// # Damaged records
//
// A damaged record fails only the reads of it. The routes that list
// sessions, search recall or list facts leave it out and name it in their
// "damaged" member; the server logs it and counts it
// (agentmem_damaged_records_total). /readyz asks the store whether it can
// serve (store.Pinger), never whether a record decodes.
//
// # Strict decoding
//
// Request bodies are decoded strictly, and refused with 400 naming the
// field's path. A member must be one the OpenAPI document lists, with its
// name's letter case. A required member must not be missing or null. A
// key must not repeat in one object, where encoding/json would keep the
// last. Text must be valid UTF-8 without a lone UTF-16 surrogate escape,
// which would store U+FFFD. An optional member given as null is taken as
// absent. Query parameters must be known, given once, and UTF-8.
// If-Match and Idempotency-Key, when present, must not be blank or
// repeated.
package server
