// Package shared is memory shared by several agents. Agents join a Pool,
// where they share insights and register facts with provenance. They read
// what their scope allows, and are told of new entries as they come.
//
// # Scopes
//
// Every entry has a scope that decides who reads it:
//
//   - Private(): only its author;
//   - Team(name): the members of that team (the author must be one);
//   - Global(): every member of the pool.
//
// An agent reads nothing until it has joined (Pool.Join(agentID,
// teams...)).
//
// # Provenance
//
// An entry records who wrote it and when (the pool's injected clock). It
// records what it came from: a session and step of the author's own
// memory, and a free-form source (a tool, a URL, a document). RegisterFact
// is idempotent. The same fact registered again in the same scope, by any
// agent and from any process, is one entry, the first registration's.
//
// # Broadcast
//
// Subscribe gives an agent a channel of the new entries it may read, in
// the pool's order. A slow subscriber never blocks writers. Each
// subscription has a bounded buffer (Options.SubscriberBuffer). An entry
// that finds it full is dropped for that subscriber only and counted
// (Subscription.Dropped). Entries carry their sequence number, so a
// subscriber that sees a gap catches up with Entries(agentID, lastSeq).
//
// BroadcastMessage (the seeds' broadcast_message) goes further. It
// delivers a chat message, durably, into the own memory of every member;
// their memories come from Options.Agents, a store.Agents of the run. It
// records the message in the pool as a global insight.
//
// # An agent's context
//
// Context renders, within one token budget counted exactly, the shared
// entries an agent may read that are most relevant to a query. The recall
// index ranks them: BM25, or hybrid with an embedder. The agent's own
// memory's context follows.
//
// # Persistence
//
// The pool is a store session (ID "pool.<name>"). Every entry is a step of
// its log: a scratchpad note whose metadata holds kind, author, scope and
// provenance. So the log is the truth, as everywhere in agentmem. Several
// processes can share one pool on one PostgreSQL; Sync reads what the
// others appended and broadcasts it. Entries are also documents of the
// recall index, for ranked search. No table of its own is needed.
// Memberships are not persisted: agents join when they start.
//
// A Pool is safe for concurrent use by many goroutines.
package shared
