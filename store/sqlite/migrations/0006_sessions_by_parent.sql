-- 0006: List by parent (ListRequest.ParentID): a tenant's branches of a
-- session, newest first, in List's order, in one index range. Only
-- branches have a parent_id.
CREATE INDEX sessions_by_parent ON sessions (tenant, parent_id, created_at DESC, id DESC) WHERE parent_id IS NOT NULL;
