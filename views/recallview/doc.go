// Package recallview is the recall index's view of the sessions' logs:
// every step of every session becomes a document of a recall.Index
// (StepDocs), found by a search scoped to its session, user or agent
// (recall.Scope), and through a branch's lineage (StoreLineage).
//
// A Follower keeps an index in step with a store by following the
// store's change feed (package views); Start runs one in the background,
// and a sessions service's writes wake it (sessions.Service.NotifyWrites).
// Indexer indexes a session's entries directly and backfills sessions
// written before.
package recallview
