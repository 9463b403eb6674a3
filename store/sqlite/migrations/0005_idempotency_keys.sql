-- 0005: the records of idempotency keys.
--
-- An append made with an idempotency key records the key here, in its
-- transaction: the fingerprint of the request (what it asked to store)
-- and where its entries are (the first and last seqs and the number of
-- steps), so that a later request with the key is a retry, answered as
-- the first was, if its fingerprint is the same, and is refused
-- otherwise (store.CheckKey). A key is recorded once per session; a
-- branch sees the records of the entries it inherits, and Delete copies
-- them into the branches with those entries. Sessions appended to before
-- this migration have no records: their step IDs decide, as before.
CREATE TABLE idempotency_keys (
    tenant      TEXT    NOT NULL,
    session_id  TEXT    NOT NULL,
    request_key TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    seq         INTEGER NOT NULL CHECK (seq > 0),
    last_seq    INTEGER NOT NULL CHECK (last_seq >= seq),
    steps       INTEGER NOT NULL CHECK (steps >= 0),
    PRIMARY KEY (tenant, session_id, request_key),
    FOREIGN KEY (tenant, session_id) REFERENCES sessions (tenant, id) ON DELETE CASCADE
) STRICT;
