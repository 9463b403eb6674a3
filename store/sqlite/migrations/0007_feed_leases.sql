-- 0007: the leases of exclusive feed consumers (store.Leaser).
--
-- A row is a consumer's lease: the follower that holds it (its holder of
-- record) and when its hold expires, in nanoseconds since the Unix epoch
-- by the store's clock. A follower takes it when the row is missing, its
-- own, or expired, and deletes it when it stops.
CREATE TABLE feed_leases (
    consumer    TEXT    NOT NULL PRIMARY KEY,
    holder      TEXT    NOT NULL,
    expires_at  INTEGER NOT NULL
) STRICT;
