// Package hierarchy is hierarchical memory for an agent: three tiers that
// together fit one token budget.
//
//   - Core: entries whose importance is at or above a threshold
//     (Options.CoreThreshold, 0.7 by default). They are always in context.
//   - Working: the recent steps, an agentmem.Memory bound to a store
//     session, bounded by a number of steps and of tokens.
//   - Episodic: older steps, summarized in chunks by the configured
//     agentmem.Summarizer (extractive by default) and indexed in the recall
//     index; recalled on demand by a query, ranked by BM25 (hybrid with an
//     embedder), never by substring.
//
// Entries move between the tiers:
//
//   - Demotion. When the working tier overflows (Options.WorkingMaxSteps or
//     WorkingMaxTokens), its oldest unpinned steps are summarized into one
//     episodic chunk and leave the working set (the store's log keeps them:
//     a compaction, not a deletion). When the core tier overflows
//     (CoreMaxItems or CoreMaxTokens), its least important entry, the oldest
//     among equals, goes down to the episodic tier, verbatim.
//   - Promotion. An entry whose importance is raised to the threshold
//     (Add with an importance, or SetImportance) joins the core tier;
//     an episodic chunk recalled Options.PromoteAfterRecalls times (by
//     Recall or by a Context that shows it) is promoted to the core tier.
//     Lowering an entry's importance below the threshold demotes it.
//
// Context(ctx, query, budget) assembles core, the episodic chunks relevant
// to the query and the working window, each as its own message. It counts
// the budget exactly (package tokenizer). It reports which tier every part
// came from and what it cost.
//
// # Persistence
//
// Nothing needs tables of its own. The working tier is a store session,
// whose log keeps every step, compactions included. The core and episodic
// tiers are documents of the recall index: groups "<session>/core" and
// "<session>/episodic", with metadata tier, importance, recall count and
// the steps covered. On the SQLite or PostgreSQL backends of both, Open
// with the same session ID resumes all three tiers after a restart.
//
// A Memory is safe for concurrent use; its operations are serialized. Two
// processes must not drive the same session's hierarchy at once.
package hierarchy
