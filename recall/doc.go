// Package recall is agentmem's long-term recall index: documents (a text
// with metadata, a time, a place in an ordered group such as a session,
// and optionally an embedding) are indexed per tenant and searched by
// relevance to a query.
//
// # Using it
//
// Index is the type callers use, over a Backend:
//
//	ix, err := recall.Open(ctx, "sqlite:///var/lib/agent/memory.db", recall.Options{})
//	err = ix.Upsert(ctx, recall.Doc{ID: "s1#3", Tenant: "acme", Text: "I moved to Lisbon", Group: "s1", Seq: 3})
//	hits, err := ix.Search(ctx, recall.Query{Tenant: "acme", Text: "where does she live", K: 5, Before: 1, After: 1})
//
// Every operation is scoped to one tenant. Bad input (invalid UTF-8, NUL,
// oversized text, NaN vectors; see CheckDoc) is refused with an
// *agentmem.InvalidError and nothing is written.
//
// # Ranking
//
// Retrieval needs no model. Text is analyzed by Tokenize (lower case,
// split on anything not a letter or digit, English stop words dropped,
// Snowball English stemming) and ranked by Okapi BM25. Search then mixes
// in what Ranking sets. Pseudo-relevance feedback searches for the terms
// that weigh most in the top results too. A document gets a share of the
// scores of its neighbours in its group, and of its group's. Diversity
// across groups is optional. When the Index has an agentmem.Embedder (such
// as an llm.Client, for any OpenAI-compatible /v1/embeddings endpoint) or
// a query carries a vector, vector results are fused with the lexical
// ones by reciprocal rank. Each hit can carry its window of neighbouring
// documents, like Mastra's messageRange. Reembed and StartReembed
// re-embed, in the background, documents embedded by another model,
// without touching the lexical index.
//
// # Backends
//
// A backend is split into capabilities, each a small interface. Backend
// stores documents, and every backend has it. What else a backend may do
// is LexicalSearcher (BM25 candidates and document frequencies),
// VectorSearcher (cosine candidates) and EmbeddingStore (what Reembed
// scans and updates). CapabilitiesOf discovers them, once, into the
// Capabilities an Index searches with; an Index refuses, with an error
// wrapping errors.ErrUnsupported, what needs one its backend lacks.
//
// Memory (here; "mem://"), package recall/sqlite (FTS5; "sqlite://") and
// package recall/postgres (built-in full-text search; "postgres://")
// have every capability and pass the conformance suite of package
// recall/recalltest. All three analyze with Tokenize and compute the same
// BM25, so they rank alike. The two SQL backends are one implementation
// (recall/internal/sqlindex, over internal/sqldb) and differ only in their
// lexical index and, on PostgreSQL, pgvector.
//
// # Conversations
//
// Package views/recallview turns every step of a session's log into a
// document (Group the session, Seq the step) and keeps an Index in step
// with a store.Store. Scope filters a search to a session, a user or an
// agent, and Options.Lineage follows a branch's conversation into its
// ancestors'.
package recall
