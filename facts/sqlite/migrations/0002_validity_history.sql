-- 0002: facts in time, and what each change did.
--
-- valid_from and valid_to (microseconds since the Unix epoch, UTC) are
-- when a fact was true in the world; valid_to is NULL while it still is.
-- A fact recorded before this migration held from when it was recorded
-- until it was superseded.
ALTER TABLE facts ADD COLUMN valid_from INTEGER;
ALTER TABLE facts ADD COLUMN valid_to INTEGER;
UPDATE facts SET valid_from = created_at,
	valid_to = CASE WHEN superseded_by <> '' THEN superseded_at END;

-- What the fact said before and after an audited action (JSON objects of
-- facts.FactState), NULL when the action has none or the fact was
-- forgotten.
ALTER TABLE facts_audit ADD COLUMN before_state TEXT;
ALTER TABLE facts_audit ADD COLUMN after_state TEXT;

-- A fact's entries, erased when it is forgotten.
CREATE INDEX facts_audit_by_fact ON facts_audit (tenant, fact_id);
