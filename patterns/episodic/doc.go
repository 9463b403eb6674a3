// Package episodic is episodic memory: an agent's (or a user's) history
// cut into episodes, each with metadata and, once ended, a summary, and
// recalled by relevance to a query.
//
// Start begins a new episode (ending the current one), Add records steps
// in it, End closes it with a summary written by the configured
// agentmem.Summarizer (summarize.Extractive by default, so no model is
// needed). Recall(ctx, query, k) returns the k episodes most relevant to a
// query, ranked by the recall index (BM25 with stemming, fused with vectors
// when the index has an embedder) over every step, summary and metadata of
// every episode, never by the first substring hit. List and Get return
// episodes with their summaries. Everything is scoped by tenant, user and
// agent (Options).
//
// # Persistence
//
// An episode is a store session (persistent retention) whose metadata marks
// it as one ("agentmem.pattern": "episode", and its start time), whose log
// holds its steps, and whose last step, once it has ended, is the summary
// (a SummaryStep covering the episode's steps, marked in its metadata).
// Its steps, summary and metadata are documents of the recall index
// (IDs "ep/<session>#<seq>", metadata as recallview.StepDocs writes them, plus
// "pattern": "episode"). On the SQLite or PostgreSQL backends everything
// survives a restart: Open resumes the current episode. No table of its
// own is needed. End indexes the whole episode again, so a crash between a
// step's append and its indexing loses nothing once the episode ends;
// Reindex repairs every episode at once.
//
// A Memory is safe for concurrent use; its operations are serialized.
package episodic
