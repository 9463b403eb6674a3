-- API keys: the SHA-256 of each token, never the token. Times are Unix
-- microseconds (UTC).
CREATE TABLE api_keys (
    id           TEXT    NOT NULL PRIMARY KEY,
    tenant       TEXT    NOT NULL,
    name         TEXT    NOT NULL DEFAULT '',
    hash         BLOB    NOT NULL CHECK (length(hash) = 32),
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at   INTEGER
) STRICT;

CREATE INDEX api_keys_by_tenant ON api_keys (tenant, created_at, id);
