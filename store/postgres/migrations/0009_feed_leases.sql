-- 0009: the leases of exclusive feed consumers (store.Leaser).
--
-- A row is a consumer's lease: the follower that holds it (its holder of
-- record) and when its hold expires, by the store's clock. A follower
-- takes it when the row is missing, its own, or expired, and deletes it
-- when it stops. On Citus it is a table of the coordinator, as
-- feed_cursors is: a leased cursor is saved in one transaction with a
-- lock of its lease's row.
CREATE TABLE feed_leases (
    consumer    text        PRIMARY KEY,
    holder      text        NOT NULL,
    expires_at  timestamptz NOT NULL
);
