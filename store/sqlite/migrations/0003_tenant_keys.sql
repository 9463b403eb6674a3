-- 0003: the tenant in every key.
--
-- Session IDs are per tenant: two tenants may each hold a session "run-1".
-- A session's key becomes (tenant, id), its entries carry their session's
-- tenant and are keyed (tenant, session_id, seq), and a branch's base is
-- in its own tenant ((tenant, base_id)). The feed already records the
-- tenant of every change.
--
-- SQLite cannot change a table's primary key in place, so sessions and
-- entries are rebuilt: new tables, rows copied, old ones dropped, new ones
-- renamed (which updates the foreign keys that name them). The migration
-- runs in one transaction; foreign keys are checked at its commit.
PRAGMA defer_foreign_keys = ON;

-- The feed's triggers name the old tables: they go first (dropping the
-- old sessions table would otherwise record every session as deleted).
DROP TRIGGER feed_append;
DROP TRIGGER feed_fork;
DROP TRIGGER feed_delete;

CREATE TABLE sessions_0003 (
    tenant      TEXT    NOT NULL DEFAULT '',
    id          TEXT    NOT NULL,
    user_id     TEXT    NOT NULL DEFAULT '',
    agent       TEXT    NOT NULL DEFAULT '',
    parent_id   TEXT,
    fork_seq    INTEGER NOT NULL DEFAULT 0,
    base_id     TEXT,
    base_seq    INTEGER NOT NULL DEFAULT 0,
    -- A JSON object of strings; NULL when there is none.
    metadata    TEXT,
    retention   TEXT    NOT NULL,
    -- NULL: never expires.
    expires_at  INTEGER,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    -- The sequence number of the newest entry of the visible log.
    last_seq    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, id),
    FOREIGN KEY (tenant, base_id) REFERENCES sessions_0003 (tenant, id),
    CHECK (fork_seq >= 0 AND base_seq >= 0 AND last_seq >= base_seq)
) STRICT;

INSERT INTO sessions_0003 (tenant, id, user_id, agent, parent_id, fork_seq, base_id, base_seq,
        metadata, retention, expires_at, created_at, updated_at, last_seq)
    SELECT tenant, id, user_id, agent, parent_id, fork_seq, base_id, base_seq,
        metadata, retention, expires_at, created_at, updated_at, last_seq
    FROM sessions;

CREATE TABLE entries_0003 (
    tenant      TEXT    NOT NULL DEFAULT '',
    session_id  TEXT    NOT NULL,
    seq         INTEGER NOT NULL CHECK (seq > 0),
    kind        TEXT    NOT NULL CHECK (kind IN ('step', 'compaction')),
    -- The step's ID (NULL for a compaction): a step is stored once.
    step_id     TEXT,
    body        BLOB    NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (tenant, session_id, seq),
    FOREIGN KEY (tenant, session_id) REFERENCES sessions_0003 (tenant, id) ON DELETE CASCADE
) STRICT;

INSERT INTO entries_0003 (tenant, session_id, seq, kind, step_id, body, created_at)
    SELECT s.tenant, e.session_id, e.seq, e.kind, e.step_id, e.body, e.created_at
    FROM entries e JOIN sessions s ON s.id = e.session_id;

DROP TABLE entries;
DROP TABLE sessions;
ALTER TABLE sessions_0003 RENAME TO sessions;
ALTER TABLE entries_0003 RENAME TO entries;

-- List: newest first (created_at, id, tenant, descending), optionally
-- filtered by tenant, user or agent.
CREATE INDEX sessions_by_created ON sessions (created_at DESC, id DESC, tenant DESC);
CREATE INDEX sessions_by_tenant  ON sessions (tenant, created_at DESC, id DESC);
CREATE INDEX sessions_by_user    ON sessions (user_id, created_at DESC, id DESC, tenant DESC);
CREATE INDEX sessions_by_agent   ON sessions (agent, created_at DESC, id DESC, tenant DESC);
-- Prune: expired sessions.
CREATE INDEX sessions_by_expiry  ON sessions (expires_at) WHERE expires_at IS NOT NULL;
-- Delete: the sessions that read through a session.
CREATE INDEX sessions_by_base    ON sessions (tenant, base_id) WHERE base_id IS NOT NULL;

-- Idempotent appends: a step ID is stored once per session.
CREATE UNIQUE INDEX entries_by_step_id ON entries (tenant, session_id, step_id) WHERE step_id IS NOT NULL;
-- The working set starts at a session's newest compaction.
CREATE INDEX entries_compactions ON entries (tenant, session_id, seq) WHERE kind = 'compaction';

CREATE TRIGGER feed_append AFTER INSERT ON entries
BEGIN
    INSERT INTO feed (kind, session_id, tenant, seq, at)
    VALUES ('append', NEW.session_id, NEW.tenant, NEW.seq, CAST(unixepoch('subsec') * 1000 AS INTEGER) * 1000000);
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
