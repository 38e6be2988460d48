-- Unique jobs (issue 13).
--
-- unique_key and unique_while (0 queued, 1 active, 2 exists) are a job's
-- key and its scope, NULL for the jobs without a key; they never change.
-- unique_holder is 1 while the job holds its key, else NULL: the engine's
-- holder index, written by the ops it journals. Both indexes are partial, so
-- the jobs without a key cost nothing:
--
--   - jobs_unique_holder enforces one holder per key, whatever the ops;
--   - jobs_unique finds the jobs with a key for Load, and the holder of a
--     key for the writer, without walking the table.

ALTER TABLE jobs ADD COLUMN unique_key TEXT;
ALTER TABLE jobs ADD COLUMN unique_while INTEGER;
ALTER TABLE jobs ADD COLUMN unique_holder INTEGER;

CREATE INDEX jobs_unique ON jobs (unique_key) WHERE unique_key IS NOT NULL;
CREATE UNIQUE INDEX jobs_unique_holder ON jobs (unique_key) WHERE unique_holder = 1;
