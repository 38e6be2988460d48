-- Unique jobs (SQLite's 0004).
--
-- unique_key and unique_while (0 queued, 1 active, 2 exists) are a job's
-- key and scope, NULL for jobs without a key; they never change.
-- unique_holder is true while the job holds its key, else NULL. Both
-- indexes are partial, so jobs without a key cost nothing:
--
--   - jobs_unique_holder enforces one holder per key, whatever the ops;
--   - jobs_unique finds the jobs with a key for Load.

ALTER TABLE jobs ADD COLUMN unique_key bytea;
ALTER TABLE jobs ADD COLUMN unique_while smallint;
ALTER TABLE jobs ADD COLUMN unique_holder boolean;

CREATE INDEX jobs_unique ON jobs (unique_key) WHERE unique_key IS NOT NULL;
CREATE UNIQUE INDEX jobs_unique_holder ON jobs (unique_key) WHERE unique_holder;
