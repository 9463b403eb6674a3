-- Facts about users. Times are microseconds since the Unix epoch, UTC.
CREATE TABLE facts (
	tenant         TEXT    NOT NULL,
	id             TEXT    NOT NULL,
	user_id        TEXT    NOT NULL,
	text           TEXT    NOT NULL,
	confidence     REAL    NOT NULL,
	created_at     INTEGER NOT NULL,
	reinforced_at  INTEGER NOT NULL,
	reinforcements INTEGER NOT NULL,
	source_session TEXT    NOT NULL,
	source_step    INTEGER NOT NULL,
	source_agent   TEXT    NOT NULL,
	superseded_by  TEXT    NOT NULL,
	superseded_at  INTEGER,
	metadata       TEXT,
	embedding      BLOB,
	PRIMARY KEY (tenant, id)
) STRICT;

CREATE INDEX facts_by_user ON facts (tenant, user_id, created_at, id);

-- Who added, superseded or forgot which fact, when and why.
CREATE TABLE facts_audit (
	seq       INTEGER PRIMARY KEY AUTOINCREMENT,
	tenant    TEXT    NOT NULL,
	user_id   TEXT    NOT NULL,
	fact_id   TEXT    NOT NULL,
	action    TEXT    NOT NULL,
	by_whom   TEXT    NOT NULL,
	reason    TEXT    NOT NULL,
	successor TEXT    NOT NULL,
	digest    TEXT    NOT NULL,
	at        INTEGER NOT NULL
) STRICT;

CREATE INDEX facts_audit_by_user ON facts_audit (tenant, user_id, seq);
