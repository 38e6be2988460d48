-- A deadline for waiting (issue 26 §3; SQLite's 0013).
--
-- start_by is the instant (unix ms) by which a job must have been
-- dispatched: if it is still waiting then (parked on a budget, waiting for
-- a worker, or scheduled), it dies. NULL for a job without one, and for
-- every row older than this. The engine clears it (store.ClearStartBy)
-- when a job that started in time returns to the queue after it.

ALTER TABLE jobs ADD COLUMN start_by bigint;
