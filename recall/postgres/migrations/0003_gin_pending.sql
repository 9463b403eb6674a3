-- 0003: smaller pending lists for the GIN indexes.
--
-- A GIN index with fastupdate (the default) gathers new entries in a
-- pending list, up to gin_pending_list_limit (4 MB by default), and merges
-- them into the index when the list is full. A search scans the whole
-- pending list, and the planner, counting its pages, turns away from the
-- index while it is long: under a steady stream of indexed turns, a
-- scoped search's per-term document counts read and detoasted every
-- document of the tenant (16 ms a term against 1.2 ms through the index).
-- At 256 kB, bench load --op mixed on PostgreSQL served 2.8 times the
-- requests, p99 950 -> 260 ms; indexing costs the same in total (the
-- seventh run measured 256 kB and 1 MB against 4 MB under a load of
-- appends: no change).
ALTER INDEX recall_docs_terms SET (gin_pending_list_limit = 256);
ALTER INDEX recall_docs_metadata SET (gin_pending_list_limit = 256);
