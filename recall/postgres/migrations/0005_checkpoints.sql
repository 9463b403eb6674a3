-- 0005: the checkpoints that a follower of a log saves with the documents
-- it writes (recall.BatchWriter): a name, and a value opaque to the index
-- (the follower's position in the log), written in the transaction that
-- writes the documents. On Citus it is a table of the coordinator, as the
-- store's feed_cursors is.
CREATE TABLE recall_checkpoints (
    name  text COLLATE "C" PRIMARY KEY,
    value text NOT NULL
);
