-- Round 2: the engine keeps no payloads and starts from a narrow scan.
--
-- job_payloads holds each job's payload (canonical JSON), one row per job
-- with a payload, so that jobs is narrow: Load walks it without reading a
-- payload, and a page of it holds some forty rows instead of a dozen. The
-- payload is written once, at insert, and read by id (GetJob, GetJobs for
-- the frames of dispatched jobs, listings).
--
-- jobs_live orders the live jobs as the engine dispatches them, (priority,
-- id), so that Load streams them in that order without sorting: the server
-- may offer the first jobs before the last are read. Queries that want it
-- state its condition, "status <= 2".

CREATE TABLE job_payloads (
    id      TEXT NOT NULL PRIMARY KEY,
    payload BLOB NOT NULL
) STRICT, WITHOUT ROWID;

INSERT INTO job_payloads (id, payload)
    SELECT id, payload FROM jobs WHERE payload IS NOT NULL AND length(payload) > 0;

ALTER TABLE jobs DROP COLUMN payload;

CREATE INDEX jobs_live ON jobs (priority, id) WHERE status <= 2;
