-- 0003: the turns extracted once.
--
-- source_session and source_step name the turn whose extraction made an
-- audit entry (facts.AuditEntry.SessionID and StepSeq); '' and 0 for the
-- entries of anything else, and for every entry written before this
-- migration. Citus adds the columns to every shard of the distributed
-- table.
ALTER TABLE facts_audit ADD COLUMN source_session text NOT NULL DEFAULT '';
ALTER TABLE facts_audit ADD COLUMN source_step bigint NOT NULL DEFAULT 0;

-- A turn is recorded as extracted at most once per user: what
-- facts.Extractions.Extracted looks up, and what refuses a second record
-- if two extractions of a turn race. The key holds the tenant, as Citus
-- needs of a unique index of a table distributed by tenant.
CREATE UNIQUE INDEX facts_audit_extracted ON facts_audit (tenant, user_id, source_session, source_step)
	WHERE action = 'extracted';
