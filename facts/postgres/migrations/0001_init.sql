-- Facts about users.
CREATE TABLE facts (
	tenant         text             NOT NULL,
	id             text             NOT NULL,
	user_id        text             NOT NULL,
	text           text             NOT NULL,
	confidence     double precision NOT NULL,
	created_at     timestamptz      NOT NULL,
	reinforced_at  timestamptz      NOT NULL,
	reinforcements integer          NOT NULL,
	source_session text             NOT NULL,
	source_step    bigint           NOT NULL,
	source_agent   text             NOT NULL,
	superseded_by  text             NOT NULL,
	superseded_at  timestamptz,
	metadata       jsonb,
	embedding      bytea,
	PRIMARY KEY (tenant, id)
);

CREATE INDEX facts_by_user ON facts (tenant, user_id, created_at, id);

-- One row per user with facts: Update locks it (SELECT ... FOR UPDATE) so
-- that the updates of one user are serialized across every server.
CREATE TABLE facts_users (
	tenant  text NOT NULL,
	user_id text NOT NULL,
	PRIMARY KEY (tenant, user_id)
);

-- Who added, superseded or forgot which fact, when and why.
CREATE TABLE facts_audit (
	seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	tenant    text        NOT NULL,
	user_id   text        NOT NULL,
	fact_id   text        NOT NULL,
	action    text        NOT NULL,
	by_whom   text        NOT NULL,
	reason    text        NOT NULL,
	successor text        NOT NULL,
	digest    text        NOT NULL,
	at        timestamptz NOT NULL
);

CREATE INDEX facts_audit_by_user ON facts_audit (tenant, user_id, seq);
