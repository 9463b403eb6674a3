-- 0004: the document frequencies of the terms that searches ask for.
--
-- A scoped search's BM25 needs, for each query term, how many of the
-- tenant's documents hold it. Counted at search time through the GIN
-- index (and the heap, for visibility), that grew with the tenant: a
-- common word in 4,000 of 5,400 documents cost 60 ms, and a search of ten
-- such words took 0.1-0.8 s in bench load's mixed traffic. recall_df
-- keeps the count of each term a search has counted in at least
-- tsv.dfMin documents (256), exactly: a search that counts such a term
-- adds its row, under the tenant's lock (its row of recall_tenants), and
-- every write of the tenant's documents then updates the rows of the
-- terms it adds or removes, under the same lock. df_version changes
-- (to a random value) whenever rows are added, so that a writer knows
-- when the terms it tracks have changed; rarer terms are still counted
-- through the index, which is cheap for them.
CREATE TABLE recall_df (
    tenant  text COLLATE "C" NOT NULL,
    lexeme  text COLLATE "C" NOT NULL,
    df      bigint           NOT NULL,
    PRIMARY KEY (tenant, lexeme)
) WITH (fillfactor = 80);

ALTER TABLE recall_tenants ADD COLUMN df_version bigint NOT NULL DEFAULT 0;
