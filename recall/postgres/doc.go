// Package postgres is the recall index's backend for PostgreSQL, which any
// number of agentmem servers can share.
//
// Documents are rows of recall_docs. The lexical side uses PostgreSQL's
// built-in full-text search. Each document's analyzed terms
// (recall.Tokenize, the same analyzer as the other backends) are stored
// verbatim as a tsvector with a GIN index, which finds the documents
// holding a query term. BM25 is then computed in SQL exactly as the
// in-memory backend computes it: Lucene's idf, k1 = 1.2, b = 0.75, and its
// candidate gating on the rarer query terms (see recall.GateTerms). It
// uses the collection statistics of the tenant alone (recall_tenants), so
// the two backends rank alike. The one approximation is the term
// frequency, read from a lexeme's positions and so capped at 256.
//
// A search reads each query term's number of the tenant's documents from
// recall_df when the term has a row there. Otherwise it counts them
// through the GIN index. It gives a row to each term it counted in at
// least DefaultDocFreqRows documents, and every write of the tenant's
// documents keeps those rows exact (see dfRows in df.go). Counting a
// common term reads most of the tenant's documents. With the rows and the
// gating, a search reads the postings of its rarer terms and the documents
// in its scope, not the tenant's.
//
// The recall index shared with the SQLite backend
// (recall/internal/sqlindex, over internal/sqldb) does the rest: the
// documents' rows, upsert, delete and clear, the tenants' statistics,
// reads and exact vector search. This package adds the tsvector index,
// BM25 in SQL, the jsonb metadata filter and pgvector. A write first locks
// its tenant's row of recall_tenants, so that a tenant's writes serialize
// and its statistics stay exact. A transaction aborted by a deadlock or a
// serialization failure is run again.
//
// # Vector search
//
// Embeddings are stored in a real[] column, the source of truth, and
// scored by cosine similarity in Go. PostgreSQL needs no extension. By
// default every embedding of the query's dimension in the tenant (that
// passes the filter) is read and scored, which is exact.
//
// Open adds a stored generated column, vec, a pgvector copy of each
// embedding, when it can. It can when the database has the pgvector
// extension, or the server offers it and the role may create it (CREATE
// EXTENSION vector, in schema public). pgvector is not a trusted
// extension, so creating it takes a superuser. Adding the column rewrites
// recall_docs once, under an exclusive lock, and stores each embedding
// twice. pgvector then ranks the tenant's embeddings by cosine distance in
// SQL and returns the nearest few: limit plus a margin of at least 16.
// These are scored in Go as on the exact path. The results are the exact
// path's, scores to the bit and ties by ID, unless more than the margin of
// documents lie within float32 rounding of the last one returned. Only
// those candidates cross the network, instead of every embedding.
// Dimensions past pgvector's 16,000 are searched exactly.
//
// Options.PGVector (URL parameter pgvector) chooses:
//
//   - "auto" (the default) uses pgvector when it can and otherwise
//     searches exactly, logging why at open;
//   - "off" never uses it;
//   - "require" fails Open with an error wrapping ErrPGVectorUnavailable
//     when it cannot.
//
// Backend.VectorSearch reports the path chosen.
//
// Options.PGVectorHNSW (URL parameter pgvector_hnsw=true) adds an HNSW
// index per embedding dimension (up to 2,000), with pgvector 0.8.0 or
// later. The index is built in the background with CREATE INDEX
// CONCURRENTLY when the dimension is first searched. The builds of one
// schema take turns across servers, and writes go on meanwhile. Searches
// go without the index until it is ready. With the index, pgvector's
// candidates come from an approximate nearest-neighbour scan. The scan is
// iterative, in strict distance order, so that the tenant and filter
// conditions still yield enough rows. A document the index misses is not
// found: recall is usually high but not total. The candidates found are
// scored exactly, and a scan that yields fewer than asked falls back to
// the exact scan. A build that fails is logged and not retried until the
// backend is opened again.
//
// Dropping the extension (DROP EXTENSION vector CASCADE) drops the vec
// column and the HNSW indexes, and loses nothing. A running backend falls
// back to exact search at its next search, and logs it. The next Open that
// finds pgvector again adds the column back.
//
// # Citus
//
// On a Citus coordinator (a database with the citus extension), a new
// schema's recall_docs, recall_tenants and recall_df are distributed by
// tenant. They are co-located with the session store's tables (see
// internal/migrate and store/postgres). Every search and every write names
// its tenant, so it runs on one worker. pgvector must then be installed on
// every node. CREATE EXTENSION on the coordinator creates it on the
// workers, the vec column is added to every shard, and an HNSW index is
// built per shard.
//
// Importing the package registers the "postgres" and "postgresql" URL
// schemes with recall.Open. A schema=NAME parameter puts the tables in
// that schema, and pgvector= and pgvector_hnsw= set the options above. For
// example: "postgres://db/agentmem?pgvector=require&pgvector_hnsw=true".
package postgres
