-- 0004: a session's settings.
--
-- settings is a JSON object with the session's pinning and automatic
-- compaction (store.Session.Pinning and AutoCompact), each member left
-- out when the session has none; NULL when it has neither, as every
-- session created before this migration.
ALTER TABLE sessions ADD COLUMN settings TEXT;
