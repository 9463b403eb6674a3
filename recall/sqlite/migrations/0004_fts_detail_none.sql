-- 0004: recall_fts keeps no positions (detail = none): every query of it
-- matches single terms, and BM25 is computed from recall_docs, so the
-- positions and columns FTS5 kept by default were written and never read.
-- The table is made again and filled from recall_docs' terms.
DROP TABLE recall_fts;
CREATE VIRTUAL TABLE recall_fts USING fts5 (terms, tokenize = 'ascii', content = '', contentless_delete = 1, detail = none);
INSERT INTO recall_fts (rowid, terms) SELECT rowid, terms FROM recall_docs;
