-- Memory blocks: labelled text of a user or a session, shown in the
-- context.
CREATE TABLE blocks (
	tenant      text        NOT NULL,
	owner_kind  text        NOT NULL,
	owner_id    text        NOT NULL,
	label       text        NOT NULL,
	value       text        NOT NULL,
	char_limit  integer     NOT NULL,
	description text        NOT NULL,
	read_only   integer     NOT NULL,
	version     bigint      NOT NULL,
	created_at  timestamptz NOT NULL,
	updated_at  timestamptz NOT NULL,
	updated_by  text        NOT NULL,
	PRIMARY KEY (tenant, owner_kind, owner_id, label)
);

-- Each block's changes: who, when, what, the value before and after.
CREATE TABLE blocks_history (
	tenant       text        NOT NULL,
	owner_kind   text        NOT NULL,
	owner_id     text        NOT NULL,
	label        text        NOT NULL,
	version      bigint      NOT NULL,
	action       text        NOT NULL,
	by_whom      text        NOT NULL,
	at           timestamptz NOT NULL,
	before_value text        NOT NULL,
	after_value  text        NOT NULL,
	PRIMARY KEY (tenant, owner_kind, owner_id, label, version)
);
