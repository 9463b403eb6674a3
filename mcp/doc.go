// Package mcp is agentmem's Model Context Protocol server: the memory's
// tools for MCP clients (desktop assistants, IDEs, agent frameworks),
// built on the official MCP Go SDK. It only adapts the library. Sessions
// live in a store.Store, and contexts come from agentmem.Memory.Context.
// Errors are the library's, worded for the model that reads them.
//
//	srv, err := mcp.New(mcp.Config{Store: st, Tenant: "acme"})
//	...
//	err = srv.Run(ctx, &sdkmcp.StdioTransport{})        // agentmem mcp
//	mux.Handle("/mcp", mcp.NewHTTPHandler(srv, tenantOf)) // streamable HTTP
//
// # Tools
//
//	create_session  start a session (id, user_id, agent, metadata, retention, ttl_seconds)
//	list_sessions   sessions newest first, by user or agent, paged
//	append          append chat messages (role, content, tool_calls, tool_call_id, is_error)
//	get_context     a session's messages fitted to a token budget, in a format,
//	                with the token count and what was dropped, truncated,
//	                summarized or is pending
//	pop             remove the newest message of a session and return it
//
// Each tool's input schema is inferred from its Go input type, with
// descriptions from jsonschema tags. It is completed with enums, bounds,
// patterns and defaults (see schema.go). The SDK validates every call
// against it before the handler runs. The output schema describes the
// structured result, which is also sent as JSON text for clients without
// structured output.
//
// # Bounds
//
// A tool's output goes into a model's context, so none grows with a
// session or an index. get_context without a budget is fitted to
// DefaultContextBudget tokens (Config.DefaultContextBudget). The results
// of search_memory, recall_facts and list_sessions hold at most
// MaxOutputBytes of JSON, each turn's text at most MaxTurnTextBytes. What
// was cut is said in the output's note, with how to get it: a larger
// budget, next_offset as offset, next_page_token.
//
// # Appends, whole turns or item by item
//
// append folds messages into steps (agentmem.FoldMessages) through
// sessions.Service.AppendMessages, as the HTTP API's messages route does.
// It takes a whole turn at a time, or one message at a time. An assistant
// message whose tool calls have no results yet is stored as a pending
// action. get_context leaves it out (and lists it under pending) until
// tool messages in later calls answer it. flush_pending records every call
// still pending as failed. pop removes the newest message
// (sessions.Service.Pop).
//
// The append is one atomic store append. With idempotency_key the steps'
// IDs are KEY/0, KEY/1, ..., and the key is recorded with the messages'
// fingerprint (store.MessagesFingerprint). So a retried call stores
// nothing twice and is answered as the first was. A call reusing the key
// with other messages is refused and stores nothing, and so is a request
// of the HTTP API with the key on another route.
//
// # Errors
//
// Errors are tool results with IsError set, never protocol errors or
// crashes. Bad arguments are one case: schema violations, a malformed
// session ID, a tool result without its call. A session that does not
// exist is another. So is a budget that cannot hold the pinned system
// prompt and task; the error gives the tokens needed. Failures of the store are logged in full
// (Config.Logger) and reported to the model as a failure to retry, without
// internals.
//
// # Tenants
//
// Every tool acts for one tenant. On a transport of its own (Run, SDK:
// stdio, in-memory) that is Config.Tenant. Over HTTP, NewHTTPHandler asks
// a TenantFunc for each request (the server's API-key authentication). It
// serves the request statelessly with the tools of that tenant. So a key
// can never reach another tenant's data through a session started by
// another key. Sessions of another tenant look exactly like missing ones.
package mcp
