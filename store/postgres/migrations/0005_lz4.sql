-- 0005: lz4 for the entries' bodies, where the server has it.
--
-- A body longer than about 2 kB is compressed when stored. PostgreSQL's
-- default, pglz, was a tenth of the database's CPU under a load of
-- appends and recall indexing (perf, bench load --op loop); lz4 compresses
-- several times faster. Only values written from now on use it: a
-- column's values may have either method, and PostgreSQL reads both.
-- A server built without lz4 (feature_not_supported) keeps pglz.
DO $$
BEGIN
    EXECUTE 'ALTER TABLE entries ALTER COLUMN body SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported THEN
    NULL;
END
$$;
