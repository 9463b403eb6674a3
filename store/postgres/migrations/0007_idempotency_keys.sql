-- 0007: the records of idempotency keys.
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
--
-- Keyed by tenant first, as every table is, so that Citus shards it with
-- the tenant's sessions and entries: the record is written on the worker
-- that holds the append's session. No foreign key to sessions: on Citus
-- the table is distributed after this migration, and a plain table cannot
-- reference a distributed one; Delete deletes a session's records with
-- its entries.
CREATE TABLE idempotency_keys (
    tenant      text    COLLATE "C" NOT NULL,
    session_id  text    COLLATE "C" NOT NULL,
    request_key text    COLLATE "C" NOT NULL,
    fingerprint text    NOT NULL,
    seq         bigint  NOT NULL CHECK (seq > 0),
    last_seq    bigint  NOT NULL CHECK (last_seq >= seq),
    steps       integer NOT NULL CHECK (steps >= 0),
    PRIMARY KEY (tenant, session_id, request_key)
);
