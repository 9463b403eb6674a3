// Package recallview is the recall index's view of the sessions' logs.
// Every step of every session becomes a document of a recall.Index
// (StepDocs). A search scoped to its session, user or agent finds it
// (recall.Scope), and so does one through a branch's lineage
// (StoreLineage).
//
// A Follower keeps an index in step with a store by following the
// store's change feed (package views); Start runs one in the background,
// and a sessions service's writes wake it (sessions.Service.NotifyWrites).
// Indexer indexes a session's entries directly and backfills sessions
// written before.
package recallview
