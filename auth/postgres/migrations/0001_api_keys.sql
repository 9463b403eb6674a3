-- API keys: the SHA-256 of each token, never the token.
CREATE TABLE api_keys (
    id           text        NOT NULL PRIMARY KEY,
    tenant       text        NOT NULL,
    name         text        NOT NULL DEFAULT '',
    hash         bytea       NOT NULL CHECK (length(hash) = 32),
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz
);

CREATE INDEX api_keys_by_tenant ON api_keys (tenant, created_at, id);
