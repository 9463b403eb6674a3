-- 0004: the feed written by the store's own statements.
--
-- The triggers of 0002 read transition tables, which a distributed
-- PostgreSQL (Citus) does not run on its sharded tables. The store now
-- writes the feed in the statements that make each change (see feed.go),
-- the same way on PostgreSQL and on Citus, so the triggers go.
--
-- The feed is keyed by tenant first, as every other table is, so that
-- Citus can shard it with the tenant's sessions and entries: an append
-- writes its feed rows on the worker that holds its session. feed_order
-- serves the readers, who read every tenant's changes in (xid, pos) order.
DROP TRIGGER feed_append ON entries;
DROP TRIGGER feed_fork ON sessions;
DROP TRIGGER feed_delete ON sessions;
DROP FUNCTION feed_append();
DROP FUNCTION feed_fork();
DROP FUNCTION feed_delete();

ALTER TABLE feed ALTER COLUMN tenant TYPE text COLLATE "C";
ALTER TABLE feed DROP CONSTRAINT feed_pkey;
ALTER TABLE feed ADD PRIMARY KEY (tenant, xid, pos);
CREATE INDEX feed_order ON feed (xid, pos);
