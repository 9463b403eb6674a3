-- 0005: a filter on metadata reads the document's own metadata column
-- (json_each), so the table of its pairs, a second copy of that column
-- written with every document, goes. Its index was never the way into a
-- search: SQLite looked a pair up per candidate document.
DROP TABLE recall_meta;
