-- 0001: sessions and their append-only logs.
--
-- Tables are created unqualified: they land in the store's schema, the first
-- entry of the search_path the store sets on every connection.

-- One row per session. Appenders of a session serialize on its row
-- (SELECT ... FOR UPDATE).
--
-- parent_id and fork_seq are the branch's provenance as the user created it
-- (Session.ParentID and ForkSeq); they never change. base_id and base_seq
-- are where the session's inherited history is read from: the session sees
-- base_id's visible log up to and including base_seq, then its own entries.
-- They start equal to parent_id and fork_seq; deleting the base copies the
-- inherited entries into this session and moves base_id/base_seq up the
-- chain (see Delete), so a branch keeps its history without its parent.
CREATE TABLE sessions (
    -- COLLATE "C": IDs sort byte by byte, as List's page tokens (and Go) order them.
    id          text        COLLATE "C" PRIMARY KEY,
    tenant      text        NOT NULL DEFAULT '',
    user_id     text        NOT NULL DEFAULT '',
    agent       text        NOT NULL DEFAULT '',
    parent_id   text,
    fork_seq    bigint      NOT NULL DEFAULT 0,
    base_id     text        COLLATE "C" REFERENCES sessions (id),
    base_seq    bigint      NOT NULL DEFAULT 0,
    -- A JSON object of strings, as text (jsonb refuses the escape \u0000,
    -- which a valid value may need); NULL when there is none.
    metadata    text,
    retention   text        NOT NULL,
    -- NULL: never expires.
    expires_at  timestamptz,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    -- The sequence number of the newest entry of the visible log.
    last_seq    bigint      NOT NULL DEFAULT 0,
    CHECK (fork_seq >= 0 AND base_seq >= 0 AND last_seq >= base_seq)
);

-- List: newest first, optionally filtered by tenant, user or agent.
CREATE INDEX sessions_by_created ON sessions (created_at DESC, id DESC);
CREATE INDEX sessions_by_tenant ON sessions (tenant, created_at DESC, id DESC);
CREATE INDEX sessions_by_user ON sessions (user_id, created_at DESC, id DESC);
CREATE INDEX sessions_by_agent ON sessions (agent, created_at DESC, id DESC);
-- Prune: expired sessions.
CREATE INDEX sessions_by_expiry ON sessions (expires_at) WHERE expires_at IS NOT NULL;
-- Delete: the sessions that read through a session.
CREATE INDEX sessions_by_base ON sessions (base_id) WHERE base_id IS NOT NULL;

-- The entries a session owns (a branch's inherited history stays with its
-- parent until the parent is deleted). body is the entry's JSON encoding as
-- bytes, stored and returned byte for byte (jsonb would reorder keys and
-- normalise numbers).
CREATE TABLE entries (
    session_id  text        COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         bigint      NOT NULL CHECK (seq > 0),
    kind        text        NOT NULL CHECK (kind IN ('step', 'compaction')),
    -- The step's ID (NULL for a compaction): a step is stored once.
    step_id     text,
    body        bytea       NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (session_id, seq),
    UNIQUE (session_id, step_id)
);

-- The working set starts at a session's newest compaction.
CREATE INDEX entries_compactions ON entries (session_id, seq) WHERE kind = 'compaction';
