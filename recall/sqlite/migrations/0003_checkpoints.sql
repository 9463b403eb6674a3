-- 0003: the checkpoints that a follower of a log saves with the documents
-- it writes (recall.BatchWriter): a name, and a value opaque to the index
-- (the follower's position in the log), written in the transaction that
-- writes the documents.
CREATE TABLE recall_checkpoints (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
