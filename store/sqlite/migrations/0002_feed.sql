-- 0002: the change feed (store.Feed).
--
-- Every change to a session's log is recorded here by the transaction that
-- makes it, through the triggers below: an appended entry, a branch
-- created, a session deleted. Writers are serialized by SQLite, so pos
-- (AUTOINCREMENT: never reused, even after the newest rows are deleted)
-- numbers the changes in commit order, and a consumer that has read up to
-- a pos has read every change committed before it. Rows every consumer
-- has read are deleted (see SaveCursor).
CREATE TABLE feed (
    pos         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind        TEXT    NOT NULL CHECK (kind IN ('append', 'fork', 'delete')),
    session_id  TEXT    NOT NULL,
    tenant      TEXT    NOT NULL,
    -- The entry's seq (append) or the fork point (fork); 0 for delete.
    seq         INTEGER NOT NULL,
    -- When the change was recorded: nanoseconds since the Unix epoch, by
    -- the database's clock (millisecond precision).
    at          INTEGER NOT NULL
) STRICT;

-- The durable cursors of the feed's consumers.
CREATE TABLE feed_cursors (
    consumer    TEXT    NOT NULL PRIMARY KEY,
    pos         INTEGER NOT NULL
) STRICT;

CREATE TRIGGER feed_append AFTER INSERT ON entries
BEGIN
    INSERT INTO feed (kind, session_id, tenant, seq, at)
    SELECT 'append', NEW.session_id, s.tenant, NEW.seq, CAST(unixepoch('subsec') * 1000 AS INTEGER) * 1000000
    FROM sessions s WHERE s.id = NEW.session_id;
END;

CREATE TRIGGER feed_fork AFTER INSERT ON sessions WHEN NEW.parent_id IS NOT NULL
BEGIN
    INSERT INTO feed (kind, session_id, tenant, seq, at)
    VALUES ('fork', NEW.id, NEW.tenant, NEW.fork_seq, CAST(unixepoch('subsec') * 1000 AS INTEGER) * 1000000);
END;

CREATE TRIGGER feed_delete AFTER DELETE ON sessions
BEGIN
    INSERT INTO feed (kind, session_id, tenant, seq, at)
    VALUES ('delete', OLD.id, OLD.tenant, 0, CAST(unixepoch('subsec') * 1000 AS INTEGER) * 1000000);
END;
