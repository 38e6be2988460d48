-- Batched jobs (SQLite's 0005). A batched job keeps its batch: the key and
-- the jq programs (when, fold) of the batch's first job, which rule the
-- whole batch, all NULL for a job without one. batch_open marks the pending
-- job of a key, the one later enqueues with that key fold into; dispatch
-- clears it. The key is bytea as every name the API takes; the programs
-- too, since PostgreSQL's text holds no NUL byte.
--
-- jobs_batched holds the few batched jobs, so that Load reads their
-- batches without walking every job. batch_key never changes once a job is
-- inserted, so the index keeps dispatch's updates HOT.

ALTER TABLE jobs ADD COLUMN batch_key bytea;
ALTER TABLE jobs ADD COLUMN batch_when bytea;
ALTER TABLE jobs ADD COLUMN batch_fold bytea;
ALTER TABLE jobs ADD COLUMN batch_open boolean NOT NULL DEFAULT false;

CREATE INDEX jobs_batched ON jobs (id) WHERE batch_key IS NOT NULL;
