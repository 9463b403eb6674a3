-- 0003: the tenant in every key.
--
-- Session IDs are per tenant: two tenants may each hold a session "run-1".
-- A session's key becomes (tenant, id), its entries carry their session's
-- tenant and are keyed (tenant, session_id, seq), and a branch's base is
-- in its own tenant ((tenant, base_id)). With the tenant leading every key
-- a distributed PostgreSQL (Citus) can shard the tables by tenant and keep
-- a session's rows together. The feed already records the tenant of every
-- change.

-- Tenants sort byte by byte, as IDs do (List's order, its page tokens).
ALTER TABLE sessions ALTER COLUMN tenant TYPE text COLLATE "C";

ALTER TABLE entries ADD COLUMN tenant text COLLATE "C" NOT NULL DEFAULT '';
UPDATE entries e SET tenant = s.tenant
    FROM sessions s WHERE s.id = e.session_id AND s.tenant <> '';

ALTER TABLE entries DROP CONSTRAINT entries_session_id_fkey;
ALTER TABLE sessions DROP CONSTRAINT sessions_base_id_fkey;
ALTER TABLE entries DROP CONSTRAINT entries_pkey;
ALTER TABLE entries DROP CONSTRAINT entries_session_id_step_id_key;
ALTER TABLE sessions DROP CONSTRAINT sessions_pkey;

ALTER TABLE sessions ADD PRIMARY KEY (tenant, id);
ALTER TABLE sessions ADD FOREIGN KEY (tenant, base_id) REFERENCES sessions (tenant, id);
ALTER TABLE entries ADD PRIMARY KEY (tenant, session_id, seq);
ALTER TABLE entries ADD UNIQUE (tenant, session_id, step_id);
ALTER TABLE entries ADD FOREIGN KEY (tenant, session_id) REFERENCES sessions (tenant, id) ON DELETE CASCADE;

-- List: newest first (created_at, id, tenant, descending), optionally
-- filtered by tenant, user or agent.
DROP INDEX sessions_by_created;
DROP INDEX sessions_by_user;
DROP INDEX sessions_by_agent;
DROP INDEX sessions_by_base;
DROP INDEX entries_compactions;
CREATE INDEX sessions_by_created ON sessions (created_at DESC, id DESC, tenant DESC);
CREATE INDEX sessions_by_user ON sessions (user_id, created_at DESC, id DESC, tenant DESC);
CREATE INDEX sessions_by_agent ON sessions (agent, created_at DESC, id DESC, tenant DESC);
-- Delete: the sessions that read through a session.
CREATE INDEX sessions_by_base ON sessions (tenant, base_id) WHERE base_id IS NOT NULL;
-- The working set starts at a session's newest compaction.
CREATE INDEX entries_compactions ON entries (tenant, session_id, seq) WHERE kind = 'compaction';

-- The entries carry their tenant: the feed needs no join.
CREATE OR REPLACE FUNCTION feed_append() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO feed (kind, session_id, tenant, seq)
    SELECT 'append', n.session_id, n.tenant, n.seq
    FROM new_entries n
    ORDER BY n.tenant, n.session_id, n.seq;
    RETURN NULL;
END
$$;
