-- Every repeat of an alert updates its incident's occurrence count and last-seen time, none of
-- them indexed. With pages filled to 100 % the new row version goes to another page, so each
-- repeat also adds an entry to all six indexes (a non-HOT update) and the table and indexes
-- bloat under an alert storm. Leaving 60 % of each page free lets PostgreSQL keep the new
-- version on the same page (a HOT update, no index writes) and prune the old ones in place.
-- Applies to pages filled from now on; VACUUM FULL or pg_repack rewrites existing ones.
ALTER TABLE "incidents" SET (fillfactor = 40);
