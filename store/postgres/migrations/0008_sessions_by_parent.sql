-- 0008: List by parent (ListRequest.ParentID): a tenant's branches of a
-- session, newest first, in List's order, in one index range. Only
-- branches have a parent_id. Citus propagates the index to the shards of
-- the distributed table.
CREATE INDEX sessions_by_parent ON sessions (tenant, parent_id, created_at DESC, id DESC) WHERE parent_id IS NOT NULL;
