// Package sessions is the one service behind every transport that serves
// sessions. The HTTP API (package server), the MCP server (package mcp) and
// the web inspector (package inspector) all call a Service. So a session is
// created, forked, appended to item by item, popped, read, fitted to a
// token budget and compacted the same way whatever the caller speaks.
//
// A Service sits over a store.Store and keeps a context cache: for the
// sessions read recently, an agentmem.Replica of the working set, so
// that a step is rendered and counted once however many context requests
// read it. The log stays the truth: before every use a cached replica
// catches up with the entries appended since, by this process or any
// other sharing the store, so a context reflects every append
// acknowledged before it was asked for. The cache is bounded in bytes
// (Config.CacheBytes), and its events can be observed for metrics
// (Service.Observe).
//
// Every operation names the session's tenant: session IDs are per tenant,
// and another tenant's session is not found, as a missing one is.
package sessions
