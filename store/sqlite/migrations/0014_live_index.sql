-- Fewer index writes for the common job (issue 24).
--
-- jobs_live now leaves out the jobs of priority 32768, the priority of a
-- job enqueued without one, which most backlogs hold alone: enqueueing and
-- acknowledging such a job writes the jobs row, jobs_queue and the payload,
-- not jobs_live. Load walks the primary key in id order for that priority
-- (it did so already for backlogs of few priorities) and reads the others
-- through this index. Queries that want it state its whole condition,
-- "status <= 2 AND priority <> 32768".

DROP INDEX jobs_live;
CREATE INDEX jobs_live ON jobs (priority, id) WHERE status <= 2 AND priority <> 32768;
