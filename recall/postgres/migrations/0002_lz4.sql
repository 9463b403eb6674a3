-- 0002: lz4 for the documents' text and terms, where the server has it.
--
-- Values longer than about 2 kB are compressed when stored. PostgreSQL's
-- default, pglz, was a tenth of the database's CPU under a load of
-- appends and recall indexing (perf, bench load --op loop); lz4 compresses
-- several times faster, and indexing a batch took 15% less time
-- (BenchmarkIndexTurns/backend=postgres). Only values written from now on
-- use it: a column's values may have either method, and PostgreSQL reads
-- both. A server built without lz4 (feature_not_supported) keeps pglz.
DO $$
BEGIN
    EXECUTE 'ALTER TABLE recall_docs ALTER COLUMN text SET COMPRESSION lz4, ALTER COLUMN terms SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported THEN
    NULL;
END
$$;
