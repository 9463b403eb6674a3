// Package patterns gathers the memory patterns built on agentmem's core,
// its store and its recall index. It holds no code. Each pattern is a
// package of its own:
//
//   - episodic: an agent's or user's history in episodes with metadata;
//     Start ends the current episode with a summary (any
//     agentmem.Summarizer, extractive by default), and Recall ranks
//     episodes by relevance to a query.
//   - shared: a pool that several agents join, where they share insights
//     and register facts with provenance under private, team or global
//     scopes, are told of new entries (bounded, non-blocking broadcast),
//     and render their context as shared entries plus their own memory.
//   - hierarchy: core (important, always shown), working (recent steps)
//     and episodic (older, summarized, recalled by query) tiers, with
//     promotion and demotion, assembled into one exact token budget.
//
// All three persist through a store.Store (sessions and their logs: the
// log is the truth) and a recall.Index (ranked retrieval). So on the
// SQLite or PostgreSQL backends they survive a restart with no tables of
// their own. All three are safe for concurrent use.
package patterns
