-- Calendar budgets (issue 25).
--
-- A calendar budget's pool refills at the instants of a cron expression:
-- reset holds it and timezone the zone it is read in (NULL is UTC). Both
-- are NULL for the other strategies, and for every row older than this.
--
-- spent_ends_at and spent_used are what the budget spent in its current
-- period, as the engine last wrote it (store.SpendBudget): the period ends
-- at spent_ends_at (unix ms) and spent_used was used of it, so a restart
-- before that instant starts the budget where it was. They are not
-- configuration: a put of the budget leaves them as they are. Both NULL
-- until something was spent.

ALTER TABLE budgets ADD COLUMN reset TEXT;
ALTER TABLE budgets ADD COLUMN timezone TEXT;
ALTER TABLE budgets ADD COLUMN spent_ends_at INTEGER;
ALTER TABLE budgets ADD COLUMN spent_used INTEGER;
