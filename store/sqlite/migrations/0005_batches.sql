-- Batched jobs (issue 13). A batched job keeps its batch: the key and the
-- jq programs (when, fold) of the batch's first job, which rule the whole
-- batch. batch_open marks the pending job of a key, the one later enqueues
-- with that key fold into (their payloads merged by fold); dispatch clears
-- it. The engine keeps at most one open live job a key; at start the
-- newest open ready job of each key is its pending job.
--
-- jobs_batched holds the few batched jobs, so that Load reads their
-- batches without walking every job.

ALTER TABLE jobs ADD COLUMN batch_key TEXT;
ALTER TABLE jobs ADD COLUMN batch_when TEXT;
ALTER TABLE jobs ADD COLUMN batch_fold TEXT;
ALTER TABLE jobs ADD COLUMN batch_open INTEGER NOT NULL DEFAULT 0;

CREATE INDEX jobs_batched ON jobs (id) WHERE batch_key IS NOT NULL;
