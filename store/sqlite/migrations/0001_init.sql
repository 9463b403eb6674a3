-- 0001: sessions and their append-only logs.
--
-- Times are INTEGER nanoseconds since the Unix epoch (UTC). Tables are STRICT
-- so that a value of the wrong type is an error, not a silent conversion.

-- One row per session.
--
-- parent_id and fork_seq are the branch's provenance as the user created it
-- (Session.ParentID and ForkSeq); they never change. base_id and base_seq
-- are where the session's inherited history is read from: the session sees
-- base_id's visible log up to and including base_seq, then its own entries.
-- They start equal to parent_id and fork_seq; deleting the base copies the
-- inherited entries into this session and moves base_id/base_seq up the
-- chain (see Delete), so a branch keeps its history without its parent.
CREATE TABLE sessions (
    id          TEXT    NOT NULL PRIMARY KEY,
    tenant      TEXT    NOT NULL DEFAULT '',
    user_id     TEXT    NOT NULL DEFAULT '',
    agent       TEXT    NOT NULL DEFAULT '',
    parent_id   TEXT,
    fork_seq    INTEGER NOT NULL DEFAULT 0,
    base_id     TEXT    REFERENCES sessions (id),
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
    CHECK (fork_seq >= 0 AND base_seq >= 0 AND last_seq >= base_seq)
) STRICT;

-- List: newest first, optionally filtered by tenant, user or agent.
CREATE INDEX sessions_by_created ON sessions (created_at DESC, id DESC);
CREATE INDEX sessions_by_tenant  ON sessions (tenant, created_at DESC, id DESC);
CREATE INDEX sessions_by_user    ON sessions (user_id, created_at DESC, id DESC);
CREATE INDEX sessions_by_agent   ON sessions (agent, created_at DESC, id DESC);
-- Prune: expired sessions.
CREATE INDEX sessions_by_expiry  ON sessions (expires_at) WHERE expires_at IS NOT NULL;
-- Delete: the sessions that read through a session.
CREATE INDEX sessions_by_base    ON sessions (base_id) WHERE base_id IS NOT NULL;

-- The entries a session owns. A branch's inherited history stays with the
-- session it was inherited from until that one is deleted. body is the
-- entry's JSON encoding, stored and returned byte for byte.
CREATE TABLE entries (
    session_id  TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL CHECK (seq > 0),
    kind        TEXT    NOT NULL CHECK (kind IN ('step', 'compaction')),
    -- The step's ID (NULL for a compaction): a step is stored once.
    step_id     TEXT,
    body        BLOB    NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT;

-- Idempotent appends: a step ID is stored once per session.
CREATE UNIQUE INDEX entries_by_step_id ON entries (session_id, step_id) WHERE step_id IS NOT NULL;
-- The working set starts at a session's newest compaction.
CREATE INDEX entries_compactions ON entries (session_id, seq) WHERE kind = 'compaction';
