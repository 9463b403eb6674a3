// Package shared is memory shared by several agents: a Pool that agents
// join, where they share insights and register facts with provenance,
// read what their scope allows, and are told of new entries as they come.
//
// # Scopes
//
// Every entry has a scope that decides who reads it:
//
//   - Private(): only its author;
//   - Team(name): the members of that team (the author must be one);
//   - Global(): every member of the pool.
//
// An agent reads nothing until it has joined (Pool.Join(agentID, teams...)).
//
// # Provenance
//
// An entry records who wrote it and when (the pool's injected clock), and
// what it came from: a session and step of the author's own memory, and a
// free-form source (a tool, a URL, a document). RegisterFact is idempotent:
// the same fact registered again in the same scope, by any agent and from
// any process, is one entry, the first registration's.
//
// # Broadcast
//
// Subscribe gives an agent a channel of the new entries it may read, in
// the pool's order. A slow subscriber never blocks writers: each
// subscription has a bounded buffer (Options.SubscriberBuffer), and an
// entry that finds it full is dropped for that subscriber only and counted
// (Subscription.Dropped). Entries carry their sequence number, so a
// subscriber that sees a gap catches up with Entries(agentID, lastSeq).
//
// BroadcastMessage (the seeds' broadcast_message) goes further: it
// delivers a chat message into the own memory of every member (their
// memories come from Options.Agents, a store.Agents of the run), durably,
// and records it in the pool as a global insight.
//
// # An agent's context
//
// Context renders, within one token budget counted exactly, the shared
// entries an agent may read that are most relevant to a query (ranked by
// the recall index: BM25, or hybrid with an embedder) followed by the
// agent's own memory's context.
//
// # Persistence
//
// The pool is a store session (ID "pool.<name>"): every entry is a step of
// its log (a scratchpad note whose metadata holds kind, author, scope and
// provenance), so the log is the truth, as everywhere in agentmem, and
// several processes can share one pool on one PostgreSQL (Sync reads what
// the others appended and broadcasts it). Entries are also documents of the
// recall index, for ranked search. No table of its own is needed.
// Memberships are not persisted: agents join when they start.
//
// A Pool is safe for concurrent use by many goroutines.
package shared
