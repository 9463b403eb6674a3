// Package postgres is the recall index's backend for PostgreSQL, which
// any number of agentmem servers can share.
//
// Documents are rows of recall_docs. The lexical side uses PostgreSQL's
// built-in full-text search: each document's analyzed terms
// (recall.Tokenize, the same analyzer as the other backends) are stored
// verbatim as a tsvector with a GIN index, which finds the documents
// holding a query term; BM25 is then computed in SQL exactly as the
// in-memory backend computes it (Lucene's idf, k1 = 1.2, b = 0.75), with
// the collection statistics of the tenant alone (recall_tenants), so the
// two backends rank alike. The one approximation is the term frequency,
// read from a lexeme's positions and so capped at 256.
//
// Embeddings are stored in a real[] column and scored exactly by cosine
// similarity. The pgvector extension is not used yet.
//
// Importing the package registers the "postgres" and "postgresql" URL
// schemes with recall.Open; a schema=NAME parameter puts the tables in
// that schema.
package postgres
