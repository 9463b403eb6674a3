-- 0001: the recall index: documents, their metadata, and an FTS5 index of
-- their analyzed terms.
--
-- Times are INTEGER microseconds since the Unix epoch (UTC), NULL for none.

-- One row per document; rowid is the document's row in recall_fts too.
-- terms holds the document's analyzed terms (recall.Tokenize) separated
-- by spaces, and len their number, BM25's document length.
CREATE TABLE recall_docs (
    rowid      INTEGER PRIMARY KEY,
    tenant     TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    text       TEXT    NOT NULL,
    -- A JSON object of strings; NULL when there is none.
    metadata   TEXT,
    time       INTEGER,
    grp        TEXT    NOT NULL DEFAULT '',
    seq        INTEGER NOT NULL DEFAULT 0,
    terms      TEXT    NOT NULL,
    len        INTEGER NOT NULL,
    -- Little-endian float32s (recall.EncodeVector); NULL when none.
    embedding  BLOB,
    dims       INTEGER NOT NULL DEFAULT 0,
    emb_norm   REAL    NOT NULL DEFAULT 0,
    emb_model  TEXT    NOT NULL DEFAULT '',
    UNIQUE (tenant, id)
) STRICT;

-- Around: a group's documents by Seq.
CREATE INDEX recall_docs_by_group ON recall_docs (tenant, grp, seq) WHERE grp <> '';
-- Vector: a tenant's documents with embeddings of one dimension.
CREATE INDEX recall_docs_by_dims ON recall_docs (tenant, dims) WHERE dims > 0;

-- Metadata pairs, for filters.
CREATE TABLE recall_meta (
    doc    INTEGER NOT NULL REFERENCES recall_docs (rowid) ON DELETE CASCADE,
    key    TEXT    NOT NULL,
    value  TEXT    NOT NULL,
    PRIMARY KEY (doc, key)
) STRICT, WITHOUT ROWID;
CREATE INDEX recall_meta_by_pair ON recall_meta (key, value, doc);

-- The lexical index: the analyzed terms of every document, matched by
-- FTS5. The ascii tokenizer splits only on ASCII separators, which
-- analyzed terms never hold, so FTS5's tokens are exactly recall's terms.
-- It keeps no copy of the text (contentless, with deletes).
CREATE VIRTUAL TABLE recall_fts USING fts5 (terms, tokenize = 'ascii', content = '', contentless_delete = 1);

-- BM25's collection statistics per tenant, kept by every write: the
-- number of documents and their total length, and each term's document
-- frequency. FTS5 would count a term's documents by walking its whole
-- posting list at every search.
CREATE TABLE recall_stats (
    tenant     TEXT    NOT NULL PRIMARY KEY,
    n          INTEGER NOT NULL,
    total_len  INTEGER NOT NULL
) STRICT;

CREATE TABLE recall_df (
    tenant  TEXT    NOT NULL,
    term    TEXT    NOT NULL,
    df      INTEGER NOT NULL,
    PRIMARY KEY (tenant, term)
) STRICT, WITHOUT ROWID;
