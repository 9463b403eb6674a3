-- 0006: a session's settings.
--
-- settings is a JSON object with the session's pinning and automatic
-- compaction (store.Session.Pinning and AutoCompact), each member left
-- out when the session has none; NULL when it has neither, as every
-- session created before this migration. Text, as metadata is: nothing
-- queries inside it. Adding a nullable column without a default rewrites
-- no row, and Citus propagates it to the shards of the distributed table.
ALTER TABLE sessions ADD COLUMN settings text;
