-- 0002: the change feed (store.Feed).
--
-- Every change to a session's log is recorded here by the transaction that
-- makes it, through the triggers below: entries appended, branches
-- created, sessions deleted.
--
-- Transactions commit in an order their identity numbers do not follow, so
-- a change is ordered by (xid, pos): the top-level transaction that made
-- it, then its position. A reader reads only changes whose xid is below
-- the xmin of its snapshot (every transaction below it has ended), so no
-- change can appear later before a cursor it has passed. A long-running
-- transaction anywhere in the cluster holds the feed back until it ends.
CREATE TABLE feed (
    xid         xid8        NOT NULL DEFAULT pg_current_xact_id(),
    pos         bigint      GENERATED ALWAYS AS IDENTITY,
    kind        text        NOT NULL CHECK (kind IN ('append', 'fork', 'delete')),
    session_id  text        COLLATE "C" NOT NULL,
    tenant      text        NOT NULL,
    -- The entry's seq (append) or the fork point (fork); 0 for delete.
    seq         bigint      NOT NULL,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (xid, pos)
);

-- The durable cursors of the feed's consumers.
CREATE TABLE feed_cursors (
    consumer    text        PRIMARY KEY,
    xid         xid8        NOT NULL,
    pos         bigint      NOT NULL
);

-- Statement-level triggers: one insert into feed per statement, however
-- many rows it wrote. SET search_path FROM CURRENT binds the functions to
-- the store's schema.
CREATE FUNCTION feed_append() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO feed (kind, session_id, tenant, seq)
    SELECT 'append', n.session_id, s.tenant, n.seq
    FROM new_entries n JOIN sessions s ON s.id = n.session_id
    ORDER BY n.session_id, n.seq;
    RETURN NULL;
END
$$;

CREATE TRIGGER feed_append AFTER INSERT ON entries
    REFERENCING NEW TABLE AS new_entries
    FOR EACH STATEMENT EXECUTE FUNCTION feed_append();

CREATE FUNCTION feed_fork() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO feed (kind, session_id, tenant, seq)
    SELECT 'fork', n.id, n.tenant, n.fork_seq FROM new_sessions n WHERE n.parent_id IS NOT NULL;
    RETURN NULL;
END
$$;

CREATE TRIGGER feed_fork AFTER INSERT ON sessions
    REFERENCING NEW TABLE AS new_sessions
    FOR EACH STATEMENT EXECUTE FUNCTION feed_fork();

CREATE FUNCTION feed_delete() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO feed (kind, session_id, tenant, seq)
    SELECT 'delete', o.id, o.tenant, 0 FROM old_sessions o;
    RETURN NULL;
END
$$;

CREATE TRIGGER feed_delete AFTER DELETE ON sessions
    REFERENCING OLD TABLE AS old_sessions
    FOR EACH STATEMENT EXECUTE FUNCTION feed_delete();
