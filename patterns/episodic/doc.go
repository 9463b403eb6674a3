// Package episodic is episodic memory: an agent's (or a user's) history
// cut into episodes, each with metadata and, once ended, a summary. The
// episodes are recalled by relevance to a query.
//
// Start begins a new episode (ending the current one), and Add records
// steps in it. End closes it with a summary written by the configured
// agentmem.Summarizer (summarize.Extractive by default, so no model is
// needed). Recall(ctx, query, k) returns the k episodes most relevant to a
// query, never by the first substring hit. The recall index ranks them
// (BM25 with stemming, fused with vectors when the index has an embedder)
// over every step, summary and metadata of every episode. List and Get
// return episodes with their summaries. Everything is scoped by tenant,
// user and agent (Options).
//
// # Persistence
//
// An episode is a store session with persistent retention. Its metadata
// marks it as one ("agentmem.pattern": "episode", and its start time), and
// its log holds its steps. Once it has ended, its last step is the
// summary: a SummaryStep covering the episode's steps, marked in its
// metadata. Its steps, summary and metadata are documents of the recall
// index. Their IDs are "ep/<session>#<seq>", and their metadata is as
// recallview.StepDocs writes it, plus "pattern": "episode". On the SQLite
// or PostgreSQL backends everything survives a restart: Open resumes the
// current episode. No table of its own is needed. End indexes the whole
// episode again, so a crash between a step's append and its indexing loses
// nothing once the episode ends. Reindex repairs every episode at once.
//
// A Memory is safe for concurrent use; its operations are serialized.
package episodic
