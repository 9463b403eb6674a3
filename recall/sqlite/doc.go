// Package sqlite is the recall index's embedded backend. Documents are in
// a SQLite database file, which the session store may share: each keeps
// its own tables, migrated as component "recall". Their analyzed terms are
// in an FTS5 index, and embeddings are BLOBs scored exactly by cosine
// similarity.
//
// FTS5 holds the terms recall.Tokenize produces, not the raw text, so it
// finds the same documents as the in-memory backend. BM25 is computed from
// statistics every write keeps per tenant (document count, total length,
// document frequencies). It is computed exactly as the in-memory backend
// computes it, so the two rank alike. FTS5's bm25() is not used: it counts
// each query term's documents by walking the term's whole posting list at
// every search, a cost that grows with the tenant.
//
// The exception are terms that look like identifiers (hashes, IDs, long
// numbers: see identifier). Nearly all of them occur in one document each,
// and a row of document frequency apiece would be most of the cost of
// indexing a turn. A search counts their short posting lists instead.
// Candidates are gated on the rarer query terms (recall.GateTerms), and at
// most recall.GateBudget of them are read, the newest first.
//
// The recall index shared with the PostgreSQL backend
// (recall/internal/sqlindex, over internal/sqldb) does the rest: the
// documents' rows, upsert, delete and clear, the tenants' document counts,
// reads and vector search. This package adds the FTS5 index, the document
// frequencies and the metadata filter, which reads each candidate's
// metadata column. The pairs have no table or index of their own: no
// query starts from them, and every document would write its pairs twice.
// Concurrent writes commit together, with those of the other components in
// the file, such as the session store's appends (sqlitedb.Group, one per
// file in a process).
//
// Importing the package registers the "sqlite" URL scheme with
// recall.Open:
//
//	import _ "github.com/agentmem/agentmem/recall/sqlite"
//
//	ix, err := recall.Open(ctx, "sqlite:///var/lib/agent/memory.db", recall.Options{})
package sqlite
