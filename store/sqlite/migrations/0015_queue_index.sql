-- No queue index entry for ready jobs (issue 24).
--
-- jobs_queue now holds only the jobs that are not ready, as jobs_status
-- does: enqueueing a ready job and acknowledging it before its dispatch
-- mark is written (the mark is held back, so most acknowledged jobs are
-- still ready on disk) write no entry here. Ready jobs are the bulk of a
-- backlog, and they are all live: the engine knows their queues, and the
-- server adds those to what Queues reads here. A listing by queue that
-- includes ready jobs walks the table in id order, which a queue holding
-- much of the backlog fills at once; queries that want the index state
-- "status <> 1".

DROP INDEX jobs_queue;
CREATE INDEX jobs_queue ON jobs (queue) WHERE status <> 1;
