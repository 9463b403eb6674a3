-- 0002: recall_df no longer keeps the document frequencies of terms that
-- look like identifiers (recall/sqlite's identifier: ASCII letters and
-- digits, a digit, and eight bytes or more, or five or more of which more
-- than half are digits); a search counts them in recall_fts instead.
-- Their rows go. (Identifiers with letters outside ASCII cannot match the
-- GLOB and keep their rows, which nothing reads or writes any more.)
DELETE FROM recall_df WHERE (tenant, term) IN (
    SELECT tenant, term FROM (
        SELECT tenant, term, length(term) AS l,
            length(term) - length(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(term,
                '0', ''), '1', ''), '2', ''), '3', ''), '4', ''), '5', ''), '6', ''), '7', ''), '8', ''), '9', '')) AS d
        FROM recall_df WHERE term NOT GLOB '*[^a-z0-9]*')
    WHERE d > 0 AND (l >= 8 OR (l >= 5 AND 2 * d > l)));
