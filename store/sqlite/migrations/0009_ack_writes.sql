-- A cheaper acknowledgement and dispatch read (issue 24).
--
-- An acknowledged job is deleted by one statement, DELETE FROM jobs: the
-- trigger jobs_deleted removes its payload row in the same step, and
-- jobs_deleted_errors its error records, only when it has some. has_errors
-- is 1 once an error record of the job has been written (the trigger
-- job_errors_added sets it, whatever writes the record), NULL before; it is
-- never cleared, since a job's records go only with the job. Most jobs
-- never fail, and their delete then skips job_errors.
--
-- job_payloads.failed_at is the job's failed_at, kept beside the payload so
-- that a dispatch reads what it needs of a job (payload and failed_at) from
-- one B-tree. The writer gives it at insert; jobs_failed_at copies every
-- later change of jobs.failed_at (a retry, a death: rare writes). A job
-- without a payload has no row here, and its failed_at is read from jobs.

ALTER TABLE jobs ADD COLUMN has_errors INTEGER;
UPDATE jobs SET has_errors = 1 WHERE id IN (SELECT job_id FROM job_errors);

ALTER TABLE job_payloads ADD COLUMN failed_at INTEGER NOT NULL DEFAULT 0;
UPDATE job_payloads SET failed_at = (SELECT failed_at FROM jobs WHERE jobs.id = job_payloads.id)
    WHERE id IN (SELECT id FROM jobs WHERE failed_at <> 0);

CREATE TRIGGER jobs_deleted AFTER DELETE ON jobs BEGIN
    DELETE FROM job_payloads WHERE id = old.id;
END;

CREATE TRIGGER jobs_deleted_errors AFTER DELETE ON jobs WHEN old.has_errors IS NOT NULL BEGIN
    DELETE FROM job_errors WHERE job_id = old.id;
END;

CREATE TRIGGER job_errors_added AFTER INSERT ON job_errors BEGIN
    UPDATE jobs SET has_errors = 1 WHERE id = new.job_id AND has_errors IS NULL;
END;

CREATE TRIGGER jobs_failed_at AFTER UPDATE OF failed_at ON jobs WHEN new.failed_at <> old.failed_at BEGIN
    UPDATE job_payloads SET failed_at = new.failed_at WHERE id = new.id;
END;
