-- 0001: the recall index: documents with a tsvector of their analyzed
-- terms (GIN-indexed for matching) and per-tenant statistics for BM25.

-- One row per document.
--
-- terms is a tsvector built from recall.Tokenize's terms, each lexeme
-- verbatim (no text search configuration touches it) with positions
-- 1..tf, so that cardinality(positions) is the term frequency (capped at
-- 256, tsvector's limit of positions per lexeme). len is the number of
-- analyzed terms, BM25's document length.
CREATE TABLE recall_docs (
    tenant     text             NOT NULL,
    id         text             NOT NULL,
    text       text             NOT NULL,
    metadata   jsonb,
    time       timestamptz,
    grp        text             NOT NULL DEFAULT '',
    seq        bigint           NOT NULL DEFAULT 0,
    terms      tsvector         NOT NULL,
    len        integer          NOT NULL,
    embedding  real[],
    dims       integer          NOT NULL DEFAULT 0,
    emb_norm   double precision NOT NULL DEFAULT 0,
    emb_model  text             NOT NULL DEFAULT '',
    PRIMARY KEY (tenant, id)
);

CREATE INDEX recall_docs_terms ON recall_docs USING gin (terms);
CREATE INDEX recall_docs_by_group ON recall_docs (tenant, grp, seq) WHERE grp <> '';
CREATE INDEX recall_docs_by_dims ON recall_docs (tenant, dims) WHERE dims > 0;
CREATE INDEX recall_docs_metadata ON recall_docs USING gin (metadata jsonb_path_ops);

-- BM25's collection statistics, per tenant: the number of documents and
-- their total length. Writers lock their tenant's row first, so a
-- tenant's writes serialize and the figures stay exact.
CREATE TABLE recall_tenants (
    tenant     text   NOT NULL PRIMARY KEY,
    n          bigint NOT NULL DEFAULT 0,
    total_len  bigint NOT NULL DEFAULT 0
);
