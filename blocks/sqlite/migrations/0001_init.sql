-- Memory blocks: labelled text of a user or a session, shown in the
-- context. Times are microseconds since the Unix epoch, UTC.
CREATE TABLE blocks (
	tenant      TEXT    NOT NULL,
	owner_kind  TEXT    NOT NULL,
	owner_id    TEXT    NOT NULL,
	label       TEXT    NOT NULL,
	value       TEXT    NOT NULL,
	char_limit  INTEGER NOT NULL,
	description TEXT    NOT NULL,
	read_only   INTEGER NOT NULL,
	version     INTEGER NOT NULL,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL,
	updated_by  TEXT    NOT NULL,
	PRIMARY KEY (tenant, owner_kind, owner_id, label)
) STRICT;

-- Each block's changes: who, when, what, the value before and after.
CREATE TABLE blocks_history (
	tenant       TEXT    NOT NULL,
	owner_kind   TEXT    NOT NULL,
	owner_id     TEXT    NOT NULL,
	label        TEXT    NOT NULL,
	version      INTEGER NOT NULL,
	action       TEXT    NOT NULL,
	by_whom      TEXT    NOT NULL,
	at           INTEGER NOT NULL,
	before_value TEXT    NOT NULL,
	after_value  TEXT    NOT NULL,
	PRIMARY KEY (tenant, owner_kind, owner_id, label, version)
) STRICT;
